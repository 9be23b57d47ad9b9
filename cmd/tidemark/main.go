// Command tidemark runs event-time stream-processing pipelines.
//
//	tidemark run PIPELINE.yaml
//	tidemark version
//
// With TIDEMARK_DATA unset, it first sets it to the shared data sets found
// in the working directory or a directory above it (datadir.Export: the
// first shared/data holding online-retail/by-day, as .ci/run and the tests
// look), so that a pipeline's ${TIDEMARK_DATA} names them from a clone
// anywhere under the directory that holds shared/.
package main

import (
	"os"
	_ "time/tzdata" // IANA zones built in: the binary needs no zoneinfo on the host

	"github.com/tidemark/tidemark/internal/cli"
	"github.com/tidemark/tidemark/internal/datadir"
)

func main() {
	datadir.Export()
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
