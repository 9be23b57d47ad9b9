package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// dbCPU measures the CPU time PostgreSQL spends for a measured run: the
// server processes (backends) of the run's connections, found in
// pg_stat_activity by the application_name the run's DSN sets, and the
// cluster's background processes (WAL writer, checkpointer, background
// writer), whose work other clients of the server may share. CPU times
// are read from /proc/<pid>/stat (utime + stime; Linux, the server on this
// machine). The backends are looked up and their times sampled every
// 20 ms while they live, so at most their last 20 ms are missed.
type dbCPU struct {
	conn *pgx.Conn
	app  string

	mu      sync.Mutex
	backend map[int]float64 // pid → last CPU seconds seen
	bgStart map[int]float64 // background pid → CPU seconds at the start
	bgLast  map[int]float64
	stop    chan struct{}
	done    chan struct{}
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's
// times (100 on every Linux architecture tidemark builds for).
const clockTicks = 100

// withApplicationName returns dsn (a URL) with application_name set.
func withApplicationName(dsn, app string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("--dsn: want a postgres:// URL")
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// startDBCPU connects to dsn and samples until Stop.
func startDBCPU(ctx context.Context, dsn, app string) (*dbCPU, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("database CPU: %w", err)
	}
	m := &dbCPU{conn: conn, app: app, backend: map[int]float64{}, bgStart: map[int]float64{}, bgLast: map[int]float64{},
		stop: make(chan struct{}), done: make(chan struct{})}
	pids, err := m.pids(ctx, `backend_type IN ('walwriter', 'checkpointer', 'background writer')`)
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	for _, p := range pids {
		if c, ok := procCPU(p); ok {
			m.bgStart[p], m.bgLast[p] = c, c
		}
	}
	go m.loop(ctx)
	return m, nil
}

func (m *dbCPU) pids(ctx context.Context, where string, args ...any) ([]int, error) {
	rows, err := m.conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE "+where, args...)
	if err != nil {
		return nil, fmt.Errorf("database CPU: %w", err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var p int
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (m *dbCPU) loop(ctx context.Context) {
	defer close(m.done)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if pids, err := m.pids(ctx, "application_name = $1", m.app); err == nil { // new connections
			m.mu.Lock()
			for _, p := range pids {
				if _, ok := m.backend[p]; !ok {
					m.backend[p] = 0
				}
			}
			m.mu.Unlock()
		}
		m.sample()
		select {
		case <-m.stop:
			m.sample()
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (m *dbCPU) sample() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := range m.backend {
		if c, ok := procCPU(p); ok {
			m.backend[p] = c
		}
	}
	for p := range m.bgLast {
		if c, ok := procCPU(p); ok {
			m.bgLast[p] = c
		}
	}
}

// Stop ends the sampling and returns the backends' CPU seconds and the
// background processes' CPU seconds during the run.
func (m *dbCPU) Stop(ctx context.Context) (backends, background float64) {
	close(m.stop)
	<-m.done
	m.conn.Close(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.backend {
		backends += c
	}
	for p, c := range m.bgLast {
		background += c - m.bgStart[p]
	}
	return backends, background
}

// procCPU returns a process's user + system CPU seconds from
// /proc/<pid>/stat (fields 14 and 15, after the command name in
// parentheses).
func procCPU(pid int) (float64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return float64(ut+st) / clockTicks, true
}
