package confluent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"

	"github.com/twmb/franz-go/pkg/sr"
)

// This file is the writing half of the wire format: registering a
// writer's schema under a subject and the header of each value.

// ErrIncompatible is wrapped by Register's error when the registry
// refuses a schema as incompatible with the subject's earlier versions
// under its compatibility level (HTTP 409, error code 409).
var ErrIncompatible = errors.New("incompatible with the subject's earlier versions")

// ErrInvalidSchema is wrapped by Register's error when the registry
// refuses the schema itself (HTTP 422, error codes 42201 and 42202).
var ErrInvalidSchema = errors.New("refused as an invalid schema")

// Register registers schema s under subject (the registry's POST
// /subjects/{subject}/versions, as Confluent's serializers do with
// auto.register.schemas) and returns its schema id: the id the schema
// already has when the registry holds it (registering is idempotent),
// else a new one, after the registry's compatibility check against the
// subject's versions. Errors name the subject and the registry's answer:
// an incompatible schema wraps ErrIncompatible, a schema the registry
// cannot parse ErrInvalidSchema; any other failure (the registry cannot
// be reached, refuses the credentials) is the request's error.
func (r *Registry) Register(ctx context.Context, subject string, s sr.Schema) (int, error) {
	id, err := r.cl.RegisterSchema(ctx, subject, s, -1, -1)
	if err == nil {
		r.mu.Lock()
		if _, ok := r.byID[id]; !ok {
			r.byID[id] = s
		}
		r.mu.Unlock()
		return id, nil
	}
	var re *sr.ResponseError
	if errors.As(err, &re) {
		switch {
		case re.StatusCode == http.StatusConflict || re.ErrorCode == 409:
			return 0, fmt.Errorf("registering the schema under subject %s: %w: the registry at %s answered: %s", subject, ErrIncompatible, r.urls, re.Message)
		case re.StatusCode == http.StatusUnprocessableEntity || re.ErrorCode/100 == 422:
			return 0, fmt.Errorf("registering the schema under subject %s: %w: the registry at %s answered: %s", subject, ErrInvalidSchema, r.urls, re.Message)
		}
	}
	return 0, fmt.Errorf("registering the schema under subject %s: schema registry at %s: %w", subject, r.urls, err)
}

// Lookup returns the version and id schema s has under subject (the
// registry's POST /subjects/{subject}). Errors wrap ErrNotFound when the
// subject does not hold s (or does not exist), else the request's error.
func (r *Registry) Lookup(ctx context.Context, subject string, s sr.Schema) (sr.SubjectSchema, error) {
	ss, err := r.cl.LookupSchema(ctx, subject, s)
	if err != nil {
		return sr.SubjectSchema{}, r.wrap("subject "+subject, err)
	}
	return ss, nil
}

// Compatibility returns the compatibility level of subject: its own, or
// the registry's global level when the subject has none (the registry's
// GET /config/{subject}?defaultToGlobal=true), in upper case
// ("BACKWARD"). Errors are the request's.
func (r *Registry) Compatibility(ctx context.Context, subject string) (string, error) {
	res := r.cl.Compatibility(sr.WithParams(ctx, sr.DefaultToGlobal), subject)
	if len(res) == 1 && res[0].Err == nil {
		return res[0].Level.String(), nil
	}
	var err error
	if len(res) == 1 {
		err = res[0].Err
	}
	var re *sr.ResponseError
	if errors.As(err, &re) && (re.StatusCode == http.StatusNotFound || re.ErrorCode/100 == 404) {
		// Registries without defaultToGlobal answer 404 for a subject
		// without its own level: ask for the global one.
		g := r.cl.Compatibility(ctx)
		if len(g) == 1 && g[0].Err == nil {
			return g[0].Level.String(), nil
		}
		if len(g) == 1 {
			err = g[0].Err
		}
	}
	return "", fmt.Errorf("compatibility level of subject %s: schema registry at %s: %w", subject, r.urls, err)
}

// HeaderSize is the length of the wire format's header: the magic byte
// and the 4-byte schema id.
const HeaderSize = 5

// AppendHeader appends the wire format's header of schema id: a zero
// magic byte and the id as 4 big-endian bytes.
func AppendHeader(dst []byte, id int) []byte {
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint32(dst, uint32(id))
}

// AppendIndexes appends Confluent's Protobuf message indexes of idx: the
// single byte 0 for the first message of the file ([0], Confluent's
// shortcut), else a zigzag-varint count and the zigzag-varint indexes.
func AppendIndexes(dst []byte, idx []int) []byte {
	if len(idx) == 0 || len(idx) == 1 && idx[0] == 0 {
		return append(dst, 0)
	}
	dst = binary.AppendVarint(dst, int64(len(idx)))
	for _, i := range idx {
		dst = binary.AppendVarint(dst, int64(i))
	}
	return dst
}

// Latest returns the latest version of subject. Errors wrap ErrNotFound
// for a subject without versions, else the request's error.
func (r *Registry) Latest(ctx context.Context, subject string) (sr.SubjectSchema, error) {
	ss, err := r.cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		return sr.SubjectSchema{}, r.wrap("latest version of subject "+subject, err)
	}
	return ss, nil
}
