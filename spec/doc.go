// Package spec is the pipeline specification: plain structs that a YAML file
// decodes into (Load, Parse) or that Go code fills in directly, with
// Defaults and Validate.
//
// Every field's doc gives its YAML key, unit and default; docs/pipeline.md
// is the user-facing copy and TestPipelineDocCoversEveryKey keeps the two in
// step. Durations are Go duration strings ("90s", "3m", "24h").
package spec
