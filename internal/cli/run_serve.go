package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/metrics"
	"github.com/tidemark/tidemark/status"
)

// monitoringLine is the line the run prints when it serves at bound (an
// address as net.Listener reports it): where, and whether every
// interface of the machine reaches it.
func monitoringLine(bound string) string {
	host, port, err := net.SplitHostPort(bound)
	s := fmt.Sprintf("metrics at http://%s/metrics, status at http://%s/", bound, bound)
	if err != nil {
		return s
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return s + fmt.Sprintf(" — on every interface of this machine (port %s): the pages are read-only, but anyone who can reach the port reads them; give --metrics-addr 127.0.0.1:%s to serve this machine only", port, port)
	}
	return s
}

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
