package confluent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

// RegistryConfig says how to reach a Schema Registry.
type RegistryConfig struct {
	// URLs of the registry ("http://127.0.0.1:8081"); several are tried
	// in turn. Required.
	URLs []string
	// Username and Password, when set, authenticate with HTTP basic auth
	// (Confluent Cloud's API key and secret).
	Username, Password string
	// BearerToken, when set, is sent as "Authorization: Bearer …".
	BearerToken string
	// TimeoutMs bounds each request. Default 10,000.
	TimeoutMs int64
}

// DefaultRegistryTimeoutMs is RegistryConfig.TimeoutMs's default.
const DefaultRegistryTimeoutMs = 10_000

// Registry is a Schema Registry client (franz-go's pkg/sr) that caches
// schemas by id, schema references by subject and version, and the
// subject versions of an id: a schema id never changes meaning in a
// registry, so each is fetched once per process. Safe for concurrent use.
type Registry struct {
	cl   *sr.Client
	urls string

	mu       sync.Mutex
	byID     map[int]sr.Schema
	versions map[int][]sr.SubjectVersion
	refs     map[string]sr.SubjectSchema // "subject\x00version"

	// The requests on their way (Outstanding).
	flight  sync.Mutex
	asked   map[uint64]time.Time // start of each request not yet answered
	askedID uint64
}

// ErrNotFound is wrapped by the errors of Registry methods for a schema
// id, subject or version the registry does not have (its error codes
// 40401, 40402, 40403 or an HTTP 404).
var ErrNotFound = errors.New("not found in the schema registry")

// NewRegistry returns a client of the registry at c.URLs; it does no IO.
// Errors: no URL, a URL franz-go refuses.
func NewRegistry(c RegistryConfig) (*Registry, error) {
	if len(c.URLs) == 0 {
		return nil, errors.New("schema_registry.url: required")
	}
	to := c.TimeoutMs
	if to <= 0 {
		to = DefaultRegistryTimeoutMs
	}
	opts := []sr.ClientOpt{
		sr.URLs(c.URLs...),
		sr.HTTPClient(&http.Client{Timeout: time.Duration(to) * time.Millisecond}),
		sr.UserAgent("tidemark"),
	}
	if c.Username != "" || c.Password != "" {
		opts = append(opts, sr.BasicAuth(c.Username, c.Password))
	}
	if c.BearerToken != "" {
		opts = append(opts, sr.BearerToken(c.BearerToken))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("schema_registry: %w", err)
	}
	return &Registry{
		cl: cl, urls: strings.Join(c.URLs, ","),
		byID: map[int]sr.Schema{}, versions: map[int][]sr.SubjectVersion{}, refs: map[string]sr.SubjectSchema{},
		asked: map[uint64]time.Time{},
	}, nil
}

// Client returns the underlying pkg/sr client.
func (r *Registry) Client() *sr.Client { return r.cl }

// URL returns the registry's URLs, comma separated, for messages.
func (r *Registry) URL() string { return r.urls }

// ask notes a request's start; the function it returns notes its end.
func (r *Registry) ask() (done func()) {
	r.flight.Lock()
	defer r.flight.Unlock()
	r.askedID++
	id := r.askedID
	r.asked[id] = time.Now()
	return func() {
		r.flight.Lock()
		delete(r.asked, id)
		r.flight.Unlock()
	}
}

// Outstanding returns the start of the oldest request to the registry
// not answered yet (wall clock), and whether there is one: a registry
// that holds its connections open without answering shows here long
// before the request's timeout fails it. Safe for concurrent use.
func (r *Registry) Outstanding() (since time.Time, ok bool) {
	r.flight.Lock()
	defer r.flight.Unlock()
	for _, t := range r.asked {
		if !ok || t.Before(since) {
			since, ok = t, true
		}
	}
	return since, ok
}

// Unreachable reports whether err, from a Registry method, says that the
// registry could not be asked — a connection refused, reset or closed
// before the answer, a timeout, an HTTP 5xx, 408 or 429 — rather than
// what it answered (not found, unauthorized, a bad request): asking again
// later may succeed. Records waiting on such an error are not judged.
func Unreachable(err error) bool {
	if err == nil || errors.Is(err, ErrNotFound) {
		return false
	}
	var re *sr.ResponseError
	if errors.As(err, &re) {
		c := re.StatusCode
		return c >= 500 || c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c == 0
	}
	return true
}

// wrap marks not-found answers with ErrNotFound and names the registry.
func (r *Registry) wrap(what string, err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) && (re.StatusCode == http.StatusNotFound || re.ErrorCode/100 == 404) {
		return fmt.Errorf("%s: %w (registry at %s: %s)", what, ErrNotFound, r.urls, re.Message)
	}
	return fmt.Errorf("%s: schema registry at %s: %w", what, r.urls, err)
}

// SchemaByID returns the schema registered under id. Errors wrap
// ErrNotFound for an unknown id, or the request's failure.
func (r *Registry) SchemaByID(ctx context.Context, id int) (sr.Schema, error) {
	r.mu.Lock()
	s, ok := r.byID[id]
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	done := r.ask()
	s, err := r.cl.SchemaByID(ctx, id)
	done()
	if err != nil {
		return sr.Schema{}, r.wrap(fmt.Sprintf("schema id %d", id), err)
	}
	r.mu.Lock()
	r.byID[id] = s
	r.mu.Unlock()
	return s, nil
}

// VersionsOf returns the (subject, version) pairs schema id is registered
// as.
func (r *Registry) VersionsOf(ctx context.Context, id int) ([]sr.SubjectVersion, error) {
	r.mu.Lock()
	v, ok := r.versions[id]
	r.mu.Unlock()
	if ok {
		return v, nil
	}
	done := r.ask()
	v, err := r.cl.SchemaVersionsByID(ctx, id)
	done()
	if err != nil {
		return nil, r.wrap(fmt.Sprintf("versions of schema id %d", id), err)
	}
	r.mu.Lock()
	r.versions[id] = v
	r.mu.Unlock()
	return v, nil
}

// Reference returns the schema a reference names (subject and version).
func (r *Registry) Reference(ctx context.Context, ref sr.SchemaReference) (sr.SubjectSchema, error) {
	key := ref.Subject + "\x00" + fmt.Sprint(ref.Version)
	r.mu.Lock()
	s, ok := r.refs[key]
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	done := r.ask()
	s, err := r.cl.SchemaByVersion(ctx, ref.Subject, ref.Version)
	done()
	if err != nil {
		return sr.SubjectSchema{}, r.wrap(fmt.Sprintf("reference %s (subject %s version %d)", ref.Name, ref.Subject, ref.Version), err)
	}
	r.mu.Lock()
	r.refs[key] = s
	r.mu.Unlock()
	return s, nil
}

// maxReferenceDepth bounds chains of schema references.
const maxReferenceDepth = 32

// References returns every schema s references, directly or through
// other references, in dependency order (a schema after those it
// references), each with its reference name.
func (r *Registry) References(ctx context.Context, s sr.Schema) ([]NamedSchema, error) {
	var out []NamedSchema
	seen := map[string]bool{}
	var walk func(refs []sr.SchemaReference, depth int) error
	walk = func(refs []sr.SchemaReference, depth int) error {
		if depth > maxReferenceDepth {
			return fmt.Errorf("schema references nest deeper than %d", maxReferenceDepth)
		}
		for _, ref := range refs {
			key := ref.Subject + "\x00" + fmt.Sprint(ref.Version)
			if seen[key] {
				continue
			}
			seen[key] = true
			rs, err := r.Reference(ctx, ref)
			if err != nil {
				return err
			}
			if err := walk(rs.References, depth+1); err != nil {
				return err
			}
			out = append(out, NamedSchema{Name: ref.Name, Schema: rs.Schema})
		}
		return nil
	}
	if err := walk(s.References, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// NamedSchema is a referenced schema and the name it is referenced by (an
// Avro type's full name, a .proto import path).
type NamedSchema struct {
	Name string
	sr.Schema
}
