package cli

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/metrics"
)

// serveMetrics serves x at http://addr/metrics until stop is called; it
// returns the address it listens on (with the port chosen for port 0).
func serveMetrics(addr string, x *metrics.Exporter) (stop func(), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", x.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, ln.Addr().String(), nil
}
