// Command tidemark runs event-time stream-processing pipelines.
//
//	tidemark run PIPELINE.yaml
//	tidemark version
package main

import (
	"os"
	_ "time/tzdata" // IANA zones built in: the binary needs no zoneinfo on the host

	"github.com/tidemark/tidemark/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
