package cli

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/tidemark/tidemark/engine"
)

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the tidemark version and build information",
		Long: `Print the tidemark version: the build the lineage column of every result
row names (tidemark=…), from the binary's build information — the module
version ("devel" for a build from a source tree) and, when the build
recorded it, "+" and the first 12 hex digits of the repository revision
("+dirty" when the tree was modified) — then the Go version and the
platform.`,
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(stdout, versionString())
			return nil
		},
	}
}

// versionString is "tidemark VERSION (GO VERSION, OS/ARCH)", VERSION being
// engine.BuildVersion, the one definition of the build that the lineage
// column records too (runtime/debug's build information: module version,
// vcs revision when present).
func versionString() string {
	return fmt.Sprintf("tidemark %s (%s, %s/%s)", engine.BuildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
