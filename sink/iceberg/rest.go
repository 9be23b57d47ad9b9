package iceberg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// restCatalog is a client of the Iceberg REST catalog (the Iceberg
// project's REST catalog OpenAPI specification, "rest-catalog-open-api"):
// the table is loaded with GET …/namespaces/{ns}/tables/{table}, created
// with POST …/namespaces/{ns}/tables, and a commit is POST
// …/namespaces/{ns}/tables/{table} with requirements (the table's uuid,
// the main branch at the base's snapshot) and updates (add-schema,
// set-current-schema, add-snapshot, set-snapshot-ref), which the server
// applies atomically or refuses with 409. The server writes the metadata
// files; the sink writes the data files and manifests under the table's
// location, which must be storage the server's readers reach too (a
// shared file system: tidemark writes local paths).
type restCatalog struct {
	uri, prefix string
	ns, table   string
	location    string
	token       string
	hc          *http.Client
}

// restTimeout bounds one request to the catalog.
const restTimeout = 30 * time.Second

func openRESTCatalog(ctx context.Context, uri, token, ns, table, location string) (*restCatalog, error) {
	c := &restCatalog{uri: strings.TrimRight(uri, "/"), ns: ns, table: table, location: location, token: token,
		hc: &http.Client{Timeout: restTimeout}}
	var cfg struct {
		Defaults  map[string]string `json:"defaults"`
		Overrides map[string]string `json:"overrides"`
	}
	if err := c.do(ctx, http.MethodGet, c.uri+"/v1/config", nil, &cfg); err != nil {
		return nil, fmt.Errorf("iceberg rest catalog %s: %w", uri, err)
	}
	c.prefix = cfg.Overrides["prefix"]
	if c.prefix == "" {
		c.prefix = cfg.Defaults["prefix"]
	}
	return c, nil
}

// base is the URL of the catalog's resources, with its prefix.
func (c *restCatalog) base() string {
	if c.prefix == "" {
		return c.uri + "/v1"
	}
	return c.uri + "/v1/" + url.PathEscape(c.prefix)
}

func (c *restCatalog) tableURL() string {
	return c.base() + "/namespaces/" + url.PathEscape(c.ns) + "/tables/" + url.PathEscape(c.table)
}

// restError is a non-2xx answer.
type restError struct {
	status int
	body   string
}

func (e *restError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

// do sends a request with a JSON body (nil: none) and decodes a JSON
// answer into out (nil: ignored).
func (c *restCatalog) do(ctx context.Context, method, u string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(b))
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Type + ": " + e.Error.Message
		}
		return &restError{status: resp.StatusCode, body: msg}
	}
	if out != nil && len(b) > 0 {
		return json.Unmarshal(b, out)
	}
	return nil
}

// loadResult is the catalog's LoadTableResult.
type loadResult struct {
	MetadataLocation string          `json:"metadata-location"`
	Metadata         json.RawMessage `json:"metadata"`
}

func (c *restCatalog) current(ctx context.Context) (string, []byte, error) {
	var res loadResult
	err := c.do(ctx, http.MethodGet, c.tableURL(), nil, &res)
	if e, ok := err.(*restError); ok && e.status == http.StatusNotFound {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("iceberg rest catalog: loading %s.%s: %w", c.ns, c.table, err)
	}
	loc := res.MetadataLocation
	if loc == "" {
		loc = "rest:" + c.ns + "." + c.table
	}
	return loc, res.Metadata, nil
}

// create creates the namespace (if absent) and the table with next's
// schema, partition spec and properties, and returns the server's
// metadata of the new table.
func (c *restCatalog) create(ctx context.Context, next *Metadata) (*Metadata, string, error) {
	err := c.do(ctx, http.MethodPost, c.base()+"/namespaces", map[string]any{"namespace": []string{c.ns}, "properties": map[string]string{}}, nil)
	if e, ok := err.(*restError); err != nil && !(ok && e.status == http.StatusConflict) {
		return nil, "", fmt.Errorf("creating namespace %s: %w", c.ns, err)
	}
	req := map[string]any{
		"name": c.table, "location": c.location, "schema": next.Schema(), "partition-spec": next.Spec(),
		"write-order": json.RawMessage(`{"order-id":0,"fields":[]}`), "stage-create": false, "properties": next.Properties,
	}
	var res loadResult
	if err := c.do(ctx, http.MethodPost, c.base()+"/namespaces/"+url.PathEscape(c.ns)+"/tables", req, &res); err != nil {
		if e, ok := err.(*restError); ok && e.status == http.StatusConflict {
			return nil, "", fmt.Errorf("creating %s.%s: %w", c.ns, c.table, ErrConflict)
		}
		return nil, "", fmt.Errorf("creating %s.%s: %w", c.ns, c.table, err)
	}
	m, err := ParseMetadata(res.MetadataLocation, res.Metadata)
	if err != nil {
		return nil, "", err
	}
	// The server assigns the ids of a new table's fields; the data files
	// carry the sink's.
	want := next.Schema().Fields
	got := m.Schema().Fields
	for i := range want {
		if i >= len(got) || got[i].ID != want[i].ID || got[i].Name != want[i].Name {
			return nil, "", fmt.Errorf("creating %s.%s: the catalog gave the fields other ids than the sink's (%v, want %v)", c.ns, c.table, got, want)
		}
	}
	return m, res.MetadataLocation, nil
}

func (c *restCatalog) commit(ctx context.Context, loc string, base, next *Metadata, _ int, _ []byte, fault func(string)) (string, error) {
	if base == nil {
		created, _, err := c.create(ctx, next)
		if err != nil {
			return "", fmt.Errorf("iceberg rest catalog: %w", err)
		}
		base = created
	}
	var snap any
	if base.CurrentSnapshotID != -1 {
		snap = base.CurrentSnapshotID
	}
	reqs := []map[string]any{
		{"type": "assert-table-uuid", "uuid": base.TableUUID},
		{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": snap},
	}
	var ups []map[string]any
	for _, s := range next.Schemas {
		if !hasSchema(base, s.SchemaID) {
			ups = append(ups, map[string]any{"action": "add-schema", "schema": s, "last-column-id": next.LastColumnID})
		}
	}
	if next.CurrentSchemaID != base.CurrentSchemaID {
		ups = append(ups, map[string]any{"action": "set-current-schema", "schema-id": next.CurrentSchemaID})
	}
	for _, s := range next.Snapshots {
		if base.Snapshot(s.SnapshotID) == nil {
			ups = append(ups, map[string]any{"action": "add-snapshot", "snapshot": s})
		}
	}
	if next.CurrentSnapshotID != base.CurrentSnapshotID {
		if next.CurrentSnapshotID == -1 {
			ups = append(ups, map[string]any{"action": "remove-snapshot-ref", "ref-name": "main"})
		} else {
			ups = append(ups, map[string]any{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": next.CurrentSnapshotID})
		}
	}
	body := map[string]any{"identifier": map[string]any{"namespace": []string{c.ns}, "name": c.table}, "requirements": reqs, "updates": ups}
	fault("iceberg-metadata")
	var res struct {
		MetadataLocation string `json:"metadata-location"`
	}
	if err := c.do(ctx, http.MethodPost, c.tableURL(), body, &res); err != nil {
		if e, ok := err.(*restError); ok && e.status == http.StatusConflict {
			return "", fmt.Errorf("iceberg rest catalog %s.%s: %w (%s)", c.ns, c.table, ErrConflict, e.body)
		}
		return "", fmt.Errorf("iceberg rest catalog %s.%s: commit: %w", c.ns, c.table, err)
	}
	return res.MetadataLocation, nil
}

func hasSchema(m *Metadata, id int) bool {
	for _, s := range m.Schemas {
		if s.SchemaID == id {
			return true
		}
	}
	return false
}

func (c *restCatalog) close() error {
	c.hc.CloseIdleConnections()
	return nil
}
