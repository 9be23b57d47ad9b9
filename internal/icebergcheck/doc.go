// Package icebergcheck reads the tables tidemark's Iceberg sink writes
// with github.com/apache/iceberg-go, the Iceberg project's Go
// implementation, in tests only. It is a module of its own, so that
// iceberg-go (300 modules, Apache Arrow and three clouds' SDKs) never
// enters tidemark's go.mod, build or binary: `go test ./...` at the root
// skips it; run it with `cd internal/icebergcheck && go mod tidy && go
// test ./...` (.ci/run does: tidy picks up the dependencies tidemark,
// required through a replace of ../.., added since).
package icebergcheck
