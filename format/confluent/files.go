package confluent

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tidemark/tidemark/format"
	"github.com/tidemark/tidemark/source"
)

// VersionResolver finds which version of a registry subject a writer's
// schema is, for records that carry their schema rather than a schema id
// (the schema in an Avro object container file's header), and how that
// version's records reach the pipeline's fields: the reader's side of
// DecoderConfig.Versions for files.
type VersionResolver struct {
	// Registry holds the subject. Required.
	Registry *Registry
	// Subject is the subject whose versions Versions lists. Required.
	Subject string
	// Versions lists the accepted versions and their mappings, as
	// DecoderConfig.Versions. Nil accepts every schema, by field names.
	Versions map[int]Version
	// Contract names the data contract, in reasons.
	Contract string
	// Fields are the pipeline's fields.
	Fields format.Fields
}

// Resolve looks the Avro schema text up in the subject (the registry's
// POST /subjects/{subject}, which compares schemas after normalizing
// them) and returns its version (0 when the subject does not hold it)
// and the projection of its records. what names the schema's holder in
// reasons ("file orders-2026-03.avro"). A schema the contract does not
// accept gives reject (Rule "schema_version"), with which every record
// of it is quarantined; err is a registry that cannot be asked.
func (v *VersionResolver) Resolve(ctx context.Context, what, text string) (version int, p format.Projection, reject *source.DecodeError, err error) {
	p = format.Projection{Fields: v.Fields}
	ss, err := v.Registry.Lookup(ctx, v.Subject, sr.Schema{Schema: text, Type: sr.TypeAvro})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return 0, p, nil, err
	}
	if err == nil {
		version = ss.Version
	}
	if v.Versions == nil {
		return version, p, nil, nil
	}
	d := &Decoder{cfg: DecoderConfig{Versions: v.Versions}}
	if version == 0 {
		return 0, p, &source.DecodeError{Rule: "schema_version", Reason: fmt.Sprintf("the schema of %s is not a version of subject %s; the contract %s accepts versions %s of it", what, v.Subject, v.Contract, d.accepted())}, nil
	}
	m, ok := v.Versions[version]
	if !ok {
		return version, p, &source.DecodeError{Rule: "schema_version", Reason: fmt.Sprintf("the schema of %s is version %d of subject %s, which the contract %s does not accept (it accepts versions %s)", what, version, v.Subject, v.Contract, d.accepted())}, nil
	}
	p.Rename, p.Defaults = m.Rename, m.Defaults
	return version, p, nil, nil
}
