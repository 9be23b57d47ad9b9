package spec

// validateSchemaComplete checks source.schema_complete: it needs a
// schema to be complete, and a nexmark source has a fixed one.
func validateSchemaComplete(s *Source, add func(key, format string, args ...any)) {
	if !s.SchemaComplete {
		return
	}
	switch {
	case s.Type == "nexmark":
		add("source.schema_complete", "a nexmark source has a fixed schema (docs/nexmark.md)")
	case len(s.Schema) == 0:
		add("source.schema_complete", "source.schema is empty: declare every field of the records, with its type")
	}
}
