// Package devregistry is the Schema Registry of `tidemark dev-kafka`: an
// in-memory registry for development and tests, speaking the REST subset
// of Confluent's Schema Registry that clients use (subjects, versions,
// schemas by id, config, compatibility checks). Everything is lost when
// it stops; it is no substitute for a registry.
//
// The REST API and the storage are franz-go's srfake (subjects, versions,
// ids, references, soft and hard deletes, config and mode). srfake
// answers every compatibility question with "compatible"; this package
// puts the registry's documented rules in front of it: registering a
// schema (POST /subjects/{subject}/versions) and the compatibility
// endpoint (POST /compatibility/subjects/{subject}/versions[/{version}])
// check the new schema against the subject's versions under the
// subject's compatibility level (or the global one):
//
//	BACKWARD             the new schema reads data written with the latest version
//	BACKWARD_TRANSITIVE  … with every version
//	FORWARD              the latest version reads data written with the new schema
//	FORWARD_TRANSITIVE   every version reads data written with the new schema
//	FULL                 BACKWARD and FORWARD
//	FULL_TRANSITIVE      BACKWARD_TRANSITIVE and FORWARD_TRANSITIVE
//	NONE                 no check
//
// "Reads" is the Avro specification's schema resolution for Avro schemas
// (twmb/avro's CheckCompatibility) and, for Protobuf, Confluent's
// documented Protobuf rules (compat.go). An incompatible registration is
// refused with HTTP 409 and error code 409, as the registry does.
package devregistry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// Registry is the development registry. Serve Handler on a listener.
type Registry struct {
	fake *srfake.Registry
	mu   sync.Mutex // a check and the registration it allows happen together
}

// New returns an empty registry whose global compatibility level is
// BACKWARD (the registry's default).
func New() *Registry {
	return &Registry{fake: srfake.NewRegistry(srfake.WithGlobalCompat(sr.CompatBackward))}
}

// Fake returns the srfake registry underneath (for seeding in tests).
func (r *Registry) Fake() *srfake.Registry { return r.fake }

// Handler returns the registry's HTTP handler.
func (r *Registry) Handler() http.Handler { return http.HandlerFunc(r.serve) }

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	path := strings.TrimSuffix(req.URL.EscapedPath(), "/")
	if req.Method == http.MethodPost {
		switch {
		case strings.HasPrefix(path, "/subjects/") && strings.HasSuffix(path, "/versions") && strings.Count(path, "/") == 3:
			subject, err := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(path, "/subjects/"), "/versions"))
			if err == nil {
				r.register(w, req, subject)
				return
			}
		case strings.HasPrefix(path, "/compatibility/subjects/"):
			rest := strings.TrimPrefix(path, "/compatibility/subjects/")
			parts := strings.Split(rest, "/")
			if len(parts) >= 2 && parts[1] == "versions" {
				subject, err := url.PathUnescape(parts[0])
				version := ""
				if len(parts) == 3 {
					version = parts[2]
				}
				if err == nil && len(parts) <= 3 {
					r.compatibility(w, req, subject, version)
					return
				}
			}
		}
	}
	r.fake.Handler().ServeHTTP(w, req)
}

// schemaRequest is the body of a registration or a compatibility check.
type schemaRequest struct {
	Schema     string               `json:"schema"`
	SchemaType string               `json:"schemaType,omitempty"`
	References []sr.SchemaReference `json:"references,omitempty"`
	// Other keys (metadata, ruleSet, id, version) pass through to srfake.
}

// readBody reads the request body and gives it back to the request.
func readBody(req *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error_code": code, "message": msg})
}

func (r *Registry) register(w http.ResponseWriter, req *http.Request, subject string) {
	body, err := readBody(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, 400, err.Error())
		return
	}
	var s schemaRequest
	if err := json.Unmarshal(body, &s); err != nil {
		// srfake reports malformed bodies itself.
		r.fake.Handler().ServeHTTP(w, req)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	msgs, err := r.check(subject, s, "", true)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, 42201, err.Error())
		return
	}
	if len(msgs) > 0 {
		writeError(w, http.StatusConflict, 409, "Schema being registered is incompatible with an earlier schema for subject \""+subject+"\", details: "+strings.Join(msgs, "; "))
		return
	}
	r.fake.Handler().ServeHTTP(w, req)
}

func (r *Registry) compatibility(w http.ResponseWriter, req *http.Request, subject, version string) {
	body, err := readBody(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, 400, err.Error())
		return
	}
	var s schemaRequest
	if err := json.Unmarshal(body, &s); err != nil {
		writeError(w, http.StatusUnprocessableEntity, 42201, "invalid schema request: "+err.Error())
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	msgs, err := r.check(subject, s, version, false)
	if err != nil {
		var nf notFound
		if asNotFound(err, &nf) {
			writeError(w, http.StatusNotFound, nf.code, nf.msg)
			return
		}
		writeError(w, http.StatusUnprocessableEntity, 42201, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp := map[string]any{"is_compatible": len(msgs) == 0}
	if req.URL.Query().Get("verbose") == "true" {
		resp["messages"] = msgs
	}
	_ = json.NewEncoder(w).Encode(resp)
}

type notFound struct {
	code int
	msg  string
}

func (n notFound) Error() string { return n.msg }

func asNotFound(err error, out *notFound) bool {
	nf, ok := err.(notFound)
	if ok {
		*out = nf
	}
	return ok
}

// get runs a GET against srfake and decodes its JSON answer; ok is false
// for an error status.
func (r *Registry) get(path string, into any) (int, error) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	r.fake.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return rec.Code, nil
	}
	return rec.Code, json.Unmarshal(rec.Body.Bytes(), into)
}

// check returns why schema s is not compatible with subject's versions
// under its level (nil when it is). version is "" for the versions the
// level names (registration, or the compatibility endpoint without a
// version), else one version ("latest" or a number).
func (r *Registry) check(subject string, s schemaRequest, version string, registering bool) ([]string, error) {
	typ := strings.ToUpper(s.SchemaType)
	if typ == "" {
		typ = "AVRO"
	}
	var cfg struct {
		Level string `json:"compatibilityLevel"`
	}
	if code, err := r.get("/config/"+url.PathEscape(subject)+"?defaultToGlobal=true", &cfg); err != nil || code != http.StatusOK {
		if _, err := r.get("/config", &cfg); err != nil {
			return nil, err
		}
	}
	level := sr.CompatibilityLevel(0)
	if err := level.UnmarshalText([]byte(cfg.Level)); err != nil || cfg.Level == "" {
		level = sr.CompatBackward
	}
	var versions []int
	code, err := r.get("/subjects/"+url.PathEscape(subject)+"/versions", &versions)
	if err != nil {
		return nil, err
	}
	if code == http.StatusNotFound || len(versions) == 0 {
		if !registering && version != "" {
			return nil, notFound{40401, "Subject '" + subject + "' not found."}
		}
		return nil, nil // the first version is compatible with nothing
	}
	if level == sr.CompatNone {
		return nil, nil
	}
	var against []int
	switch {
	case version == "latest":
		against = versions[len(versions)-1:]
	case version != "":
		v, err := strconv.Atoi(version)
		if err != nil {
			return nil, notFound{40402, "Version " + version + " not found."}
		}
		found := false
		for _, x := range versions {
			found = found || x == v
		}
		if !found {
			return nil, notFound{40402, "Version " + version + " not found."}
		}
		against = []int{v}
	case level == sr.CompatBackwardTransitive || level == sr.CompatForwardTransitive || level == sr.CompatFullTransitive:
		against = versions
	default:
		against = versions[len(versions)-1:]
	}
	backward := level == sr.CompatBackward || level == sr.CompatBackwardTransitive || level == sr.CompatFull || level == sr.CompatFullTransitive
	forward := level == sr.CompatForward || level == sr.CompatForwardTransitive || level == sr.CompatFull || level == sr.CompatFullTransitive
	newS, err := r.parse(typ, s.Schema, s.References)
	if err != nil {
		return nil, fmt.Errorf("Invalid schema: %v", err)
	}
	var msgs []string
	for _, v := range against {
		var old sr.SubjectSchema
		if _, err := r.get(fmt.Sprintf("/subjects/%s/versions/%d", url.PathEscape(subject), v), &old); err != nil {
			return nil, err
		}
		oldType := strings.ToUpper(old.Type.String())
		if oldType != typ {
			msgs = append(msgs, fmt.Sprintf("version %d is %s, the new schema is %s", v, oldType, typ))
			continue
		}
		oldS, err := r.parse(typ, old.Schema.Schema, old.References)
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("version %d does not parse: %v", v, err))
			continue
		}
		if backward {
			// The new schema reads what version v wrote.
			if err := compatible(oldS, newS); err != nil {
				msgs = append(msgs, fmt.Sprintf("BACKWARD against version %d: %v", v, err))
			}
		}
		if forward {
			if err := compatible(newS, oldS); err != nil {
				msgs = append(msgs, fmt.Sprintf("FORWARD against version %d: %v", v, err))
			}
		}
	}
	return msgs, nil
}
