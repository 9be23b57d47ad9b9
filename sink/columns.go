package sink

// The bookkeeping columns of a result table around its key and value
// columns, as every table sink (sink/postgres, sink/sqlite) names them:
// the window, the row's version and finality, the watermark that
// produced it and when it was written (docs/semantics.md, the output
// rows).
const (
	ColWindowStart = "window_start"
	ColWindowEnd   = "window_end"
	ColVersion     = "version"
	ColIsFinal     = "is_final"
	ColWatermarkAt = "watermark_at"
	ColUpdatedAt   = "updated_at"
)
