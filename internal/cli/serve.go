package cli

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/metrics"
	"github.com/tidemark/tidemark/status"
)

// serveMonitoring serves x at http://addr/metrics and the status page pg
// at /status (JSON) and / (HTML) until stop is called; it returns the
// address it listens on (with the port chosen for port 0).
func serveMonitoring(addr string, x *metrics.Exporter, pg *status.Page) (stop func(), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", x.Handler())
	mux.Handle("/", pg.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, ln.Addr().String(), nil
}
