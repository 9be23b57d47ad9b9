package iceberg

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/internal/icebergread"
)

// fakeREST is an in-memory Iceberg REST catalog for one namespace: it
// keeps each table's metadata as generic JSON (not the sink's structs),
// checks a commit's requirements and applies its updates as the REST
// specification describes them, and writes every version as a metadata
// file under the table's location, as a server on shared storage does.
type fakeREST struct {
	mu       sync.Mutex
	tables   map[string]map[string]any // name → metadata
	versions map[string]int
	commits  int
	conflict int // answer 409 to this many commits first
	t        *testing.T
}

func (f *fakeREST) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer s3cret" {
		http.Error(w, `{"error":{"message":"no token","type":"NotAuthorizedException","code":401}}`, http.StatusUnauthorized)
		return
	}
	var body map[string]any
	if r.Body != nil {
		json.NewDecoder(r.Body).Decode(&body)
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1/cat")
	reply := func(code int, v any) {
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	switch {
	case r.URL.Path == "/v1/config":
		reply(200, map[string]any{"defaults": map[string]string{}, "overrides": map[string]string{"prefix": "cat"}})
	case path == "/namespaces" && r.Method == http.MethodPost:
		reply(200, body)
	case path == "/namespaces/db/tables" && r.Method == http.MethodPost:
		name := body["name"].(string)
		if f.tables[name] != nil {
			reply(409, map[string]any{"error": map[string]any{"message": "exists", "type": "AlreadyExistsException", "code": 409}})
			return
		}
		schema := body["schema"].(map[string]any)
		last := 0.0
		for _, fl := range schema["fields"].([]any) {
			last = max(last, fl.(map[string]any)["id"].(float64))
		}
		m := map[string]any{"format-version": 2, "table-uuid": "11111111-2222-3333-4444-555555555555", "location": body["location"],
			"last-sequence-number": 0, "last-updated-ms": 0, "last-column-id": last, "current-schema-id": 0, "schemas": []any{schema},
			"default-spec-id": 0, "partition-specs": []any{body["partition-spec"]}, "last-partition-id": 999, "default-sort-order-id": 0,
			"sort-orders": []any{body["write-order"]}, "properties": body["properties"], "current-snapshot-id": -1,
			"snapshots": []any{}, "snapshot-log": []any{}, "metadata-log": []any{}}
		f.tables[name] = m
		reply(200, map[string]any{"metadata-location": f.write(name, m), "metadata": m})
	case strings.HasPrefix(path, "/namespaces/db/tables/"):
		name := strings.TrimPrefix(path, "/namespaces/db/tables/")
		m := f.tables[name]
		if m == nil {
			reply(404, map[string]any{"error": map[string]any{"message": "no table", "type": "NoSuchTableException", "code": 404}})
			return
		}
		if r.Method == http.MethodGet {
			reply(200, map[string]any{"metadata-location": f.loc(name), "metadata": m})
			return
		}
		if f.conflict > 0 {
			f.conflict--
			reply(409, map[string]any{"error": map[string]any{"message": "try again", "type": "CommitFailedException", "code": 409}})
			return
		}
		for _, q := range body["requirements"].([]any) {
			req := q.(map[string]any)
			switch req["type"] {
			case "assert-table-uuid":
				if req["uuid"] != m["table-uuid"] {
					reply(409, map[string]any{"error": map[string]any{"message": "uuid", "type": "CommitFailedException", "code": 409}})
					return
				}
			case "assert-ref-snapshot-id":
				cur := m["current-snapshot-id"]
				want := req["snapshot-id"]
				if want == nil {
					want = -1.0
				}
				if fmt.Sprint(cur) != fmt.Sprint(want) && !(fmt.Sprint(cur) == "-1" && fmt.Sprint(want) == "-1") {
					reply(409, map[string]any{"error": map[string]any{"message": "main moved", "type": "CommitFailedException", "code": 409}})
					return
				}
			default:
				f.t.Errorf("requirement %v", req)
			}
		}
		for _, u := range body["updates"].([]any) {
			up := u.(map[string]any)
			switch up["action"] {
			case "add-schema":
				m["schemas"] = append(m["schemas"].([]any), up["schema"])
				m["last-column-id"] = up["last-column-id"]
			case "set-current-schema":
				m["current-schema-id"] = up["schema-id"]
			case "add-snapshot":
				s := up["snapshot"].(map[string]any)
				m["snapshots"] = append(m["snapshots"].([]any), s)
				m["last-sequence-number"] = s["sequence-number"]
			case "set-snapshot-ref":
				m["current-snapshot-id"] = up["snapshot-id"]
				m["refs"] = map[string]any{"main": map[string]any{"snapshot-id": up["snapshot-id"], "type": "branch"}}
			case "remove-snapshot-ref":
				m["current-snapshot-id"] = -1
				delete(m, "refs")
			default:
				f.t.Errorf("update %v", up)
			}
		}
		f.commits++
		reply(200, map[string]any{"metadata-location": f.write(name, m), "metadata": m})
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeREST) loc(name string) string {
	m := f.tables[name]
	return filepath.Join(m["location"].(string), "metadata", fmt.Sprintf("v%d.metadata.json", f.versions[name]))
}

func (f *fakeREST) write(name string, m map[string]any) string {
	f.versions[name]++
	b, _ := json.Marshal(m)
	p := f.loc(name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// TestRESTCatalog: a table created and committed through a REST catalog
// (with a prefix from /v1/config, a bearer token, a refused first
// commit retried), read back by the independent reader from the
// metadata file the server wrote; a repeated commit sends nothing.
func TestRESTCatalog(t *testing.T) {
	ctx := context.Background()
	fake := &fakeREST{tables: map[string]map[string]any{}, versions: map[string]int{}, conflict: 1, t: t}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	f := newFixture(t, Options{Catalog: "rest", CatalogToken: "s3cret"})
	f.opts.CatalogURI = srv.URL
	s := f.open(desc)
	must(t, s.Recover(ctx, 0, nil))
	var prepared [][]byte
	for i := range 3 {
		op := changelog.UpdateAfter
		if i == 0 {
			op = changelog.Insert
		}
		must(t, s.Write(ctx, []changelog.Row{rw(op, 0, "a", "1", int64(i+1), uint64(i+1)), rw(changelog.Insert, int64(i)*hour, "b", "2", 1, 1)}))
		p, err := s.Prepare(ctx, int64(i+1))
		must(t, err)
		must(t, s.Commit(ctx, int64(i+1), p))
		prepared = append(prepared, p)
	}
	must(t, s.Commit(ctx, 3, prepared[2]))
	must(t, s.Recover(ctx, 3, prepared[2]))
	must(t, s.Close(ctx))
	if fake.commits != 3 {
		t.Fatalf("%d commits reached the server, want 3", fake.commits)
	}
	fake.mu.Lock()
	loc := fake.loc("rev")
	fake.mu.Unlock()
	tbl, err := icebergread.Open(loc)
	must(t, err)
	rows, _, _, err := tbl.Scan()
	must(t, err)
	got := icebergread.Sorted(rows, []string{"window_start", "store", "n", "version"})
	want := []string{"1970-01-01T00:00:00Z a 3 3", "1970-01-01T00:00:00Z b 1 1", "1970-01-01T01:00:00Z b 1 1", "1970-01-01T02:00:00Z b 1 1"}
	if !slices.Equal(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	if len(tbl.Ancestry()) != 3 {
		t.Fatalf("%d snapshots", len(tbl.Ancestry()))
	}
	// Without the token the catalog refuses, and the error says so.
	f.opts.CatalogToken = ""
	if _, err := NewResults(ctx, desc, f.opts); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("no token: %v", err)
	}
}
