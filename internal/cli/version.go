package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the tidemark version and build information",
		Args:  usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(stdout, versionString())
			return nil
		},
	}
}

// versionString is "tidemark VERSION (module version, vcs revision, go
// version, os/arch)".
func versionString() string {
	v := Version
	extra := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				extra += " rev " + s.Value
			case "vcs.modified":
				if s.Value == "true" {
					extra += "+dirty"
				}
			}
		}
	}
	return fmt.Sprintf("tidemark %s (%s%s, %s/%s)", v, runtime.Version(), extra, runtime.GOOS, runtime.GOARCH)
}
