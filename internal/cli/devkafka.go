package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/tidemark/tidemark/internal/devbroker"
	"github.com/tidemark/tidemark/internal/devregistry"
)

// devKafkaDefaultAddr is where tidemark dev-kafka listens by default, and
// the default --brokers of tidemark produce.
const devKafkaDefaultAddr = "127.0.0.1:9092"

// devKafkaFlags are the flags of tidemark dev-kafka.
type devKafkaFlags struct {
	addr       string
	partitions int
	topics     []string
	autoCreate bool
	quiet      bool
	// outliveParent keeps the broker running after the process that
	// started it exits.
	outliveParent bool
	// registryAddr is where the development Schema Registry listens; ""
	// serves none.
	registryAddr string
	// minSession is the broker's group.min.session.timeout.ms: the
	// shortest session timeout a group member may ask for.
	minSession time.Duration
}

// devRegistryDefaultAddr is where tidemark dev-kafka's Schema Registry
// listens by default (the registry's usual port).
const devRegistryDefaultAddr = "127.0.0.1:8081"

// parentPollInterval is how often dev-kafka checks that the process that
// started it is still running.
const parentPollInterval = 200 * time.Millisecond

// newDevKafkaCmd is tidemark dev-kafka: the listening line goes to stdout,
// notes to stderr.
func newDevKafkaCmd(stdout, stderr io.Writer) *cobra.Command {
	var f devKafkaFlags
	cmd := &cobra.Command{
		Use:   "dev-kafka [--addr HOST:PORT] [--topic NAME]... [flags]",
		Short: "Run an in-memory Kafka broker for demos and tests (data is lost when it stops)",
		Long: `Run an in-memory Kafka broker for demos and tests (data is lost when it
stops).

The broker is franz-go's kfake: one broker that speaks the Kafka protocol
(produce, fetch, consumer groups, transactions), enough for tidemark's Kafka
source and sinks and for other Kafka clients, on a machine without Kafka. It
keeps everything in memory: nothing is written to disk and every topic and
record is gone when it stops. It is no substitute for a Kafka cluster.

When it listens, one line "kafka listening on HOST:PORT" goes to stdout
(with --addr HOST:0, the port the system chose), for scripts to wait for.
It runs until SIGINT or SIGTERM, then closes and exits 0. It also stops
(and exits 0) when the process that started it exits, on Unix: stopping
"go run ./cmd/tidemark dev-kafka" by the PID of go run, or a script or
test harness that ends or is killed, never leaves a broker listening
(--outlive-parent keeps it running). For scripts, build the binary
(go build -o tidemark ./cmd/tidemark) and run that: its PID is the
broker's, and go run does not pass SIGINT sent to its own PID on.

tidemark's Kafka source and sinks require their topics to exist: create them
with --topic (each with --partitions partitions) or tidemark produce --create.

It also serves a Schema Registry on --registry-addr (default
127.0.0.1:8081; --registry-addr "" serves none), for Avro and Protobuf
topics: the REST subset clients use (subjects, versions, schemas by id,
config, compatibility checks), with the registry's compatibility rules
(BACKWARD by default; FORWARD, FULL and the transitive levels per subject
or globally, PUT /config). Like the broker it keeps everything in memory and
is for development only. Its line "schema registry listening on
http://HOST:PORT" follows the broker's on stdout.

Consumer groups: the broker refuses a member whose session timeout is below
--group-min-session-timeout (Kafka's group.min.session.timeout.ms; default
6s, as Kafka's). A group of tidemark instances (source.assignment: group)
notices a killed instance after source.session_timeout; lower both, e.g.
--group-min-session-timeout 500ms and session_timeout: 1s, for tests and
demos that kill instances and should not wait 6 s each time.

Exit status: 0 when stopped by a signal, 1 when the address cannot be
listened on, 2 for a usage error.`,
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDevKafka(cmd.Context(), &f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", devKafkaDefaultAddr, "address to listen on, HOST:PORT; clients are told to connect to it (port 0: any free port)")
	fl.IntVar(&f.partitions, "partitions", 4, "partitions of each --topic, and of topics created without a partition count")
	fl.StringArrayVar(&f.topics, "topic", nil, "topic to create at start (repeatable; a,b,c creates three)")
	fl.BoolVar(&f.autoCreate, "auto-create", false, "let clients that ask for it create a topic by producing to it or fetching its metadata (tidemark never asks)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the listening line")
	fl.BoolVar(&f.outliveParent, "outlive-parent", false, "keep running after the process that started it exits (by default the broker stops then)")
	fl.DurationVar(&f.minSession, "group-min-session-timeout", 6*time.Second, "shortest session timeout a consumer group member may ask for (group.min.session.timeout.ms)")
	fl.StringVar(&f.registryAddr, "registry-addr", devRegistryDefaultAddr, `address of the development Schema Registry, HOST:PORT (port 0: any free port; "" serves none)`)
	return cmd
}

// runDevKafka runs the broker until ctx ends.
func runDevKafka(ctx context.Context, f *devKafkaFlags, stdout, stderr io.Writer) error {
	ppid := os.Getppid() // before anything else: the parent may exit meanwhile
	host, portText, err := net.SplitHostPort(f.addr)
	if err != nil {
		return usageErr("--addr %q: %v", f.addr, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return usageErr("--addr %q: port %q is not a number from 0 to 65535", f.addr, portText)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		// The broker tells clients to connect to the address it listens
		// on, so it must be one they can reach.
		return usageErr("--addr %q: name a host clients can connect to (127.0.0.1, or this machine's address), not a wildcard", f.addr)
	}
	if f.partitions < 1 {
		return usageErr("--partitions: must be at least 1")
	}
	if f.minSession < time.Millisecond {
		return usageErr("--group-min-session-timeout %s: must be at least 1ms", f.minSession)
	}
	var topics []string
	for _, t := range f.topics {
		for _, name := range strings.Split(t, ",") {
			if !validTopic(name) {
				return usageErr("--topic: %q is not a topic name (1 to 249 of [a-zA-Z0-9._-], not . or ..)", name)
			}
			topics = append(topics, name)
		}
	}

	opts := []kfake.Opt{
		kfake.Ports(int(port)), // one broker
		kfake.ListenFn(func(network, address string) (net.Listener, error) {
			// kfake listens on 127.0.0.1: keep its port, use our host.
			_, p, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			return net.Listen(network, net.JoinHostPort(host, p))
		}),
		kfake.DefaultNumPartitions(f.partitions),
		kfake.GroupMinSessionTimeout(f.minSession),
	}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(int32(f.partitions), topics...))
	}
	if f.autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("dev-kafka: %w", err)
	}
	defer c.Close()
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	// Members waiting in a rebalance keep their sessions, as on Kafka
	// (devbroker.KeepJoinersAlive says why kfake needs this).
	if err := devbroker.KeepJoinersAlive(kctx, c, max(f.minSession/3, 10*time.Millisecond)); err != nil {
		return fmt.Errorf("dev-kafka: %w", err)
	}
	addr := c.ListenAddrs()[0]
	if _, err := fmt.Fprintf(stdout, "kafka listening on %s\n", addr); err != nil {
		return err
	}
	var regURL string
	if f.registryAddr != "" {
		ln, err := net.Listen("tcp", f.registryAddr)
		if err != nil {
			return fmt.Errorf("dev-kafka: schema registry: %w", err)
		}
		srv := &http.Server{Handler: devregistry.New().Handler(), ReadHeaderTimeout: 10 * time.Second}
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = srv.Serve(ln)
		}()
		defer func() {
			srv.Close()
			<-served
		}()
		regURL = "http://" + ln.Addr().String()
		if _, err := fmt.Fprintf(stdout, "schema registry listening on %s\n", regURL); err != nil {
			return err
		}
	}
	if !f.quiet {
		fmt.Fprintf(stderr, "dev-kafka: in-memory broker for demos and tests; everything is lost when it stops (Ctrl-C)\n")
		if len(topics) > 0 {
			fmt.Fprintf(stderr, "dev-kafka: topics %s, %d partitions each\n", strings.Join(topics, ", "), f.partitions)
		}
		fmt.Fprintf(stderr, "dev-kafka: KAFKA_BROKERS=%s\n", addr)
		if regURL != "" {
			fmt.Fprintf(stderr, "dev-kafka: SCHEMA_REGISTRY_URL=%s (in memory, for development)\n", regURL)
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait() // the watcher below ends with ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if !f.outliveParent {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if waitParent(ctx, ppid, parentPollInterval) {
				cancel(fmt.Errorf("the process that started it (pid %d) exited", ppid))
			}
		}()
	}
	<-ctx.Done()
	if !f.quiet {
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			fmt.Fprintf(stderr, "dev-kafka: %v\n", cause)
		}
		fmt.Fprintf(stderr, "dev-kafka: stopped\n")
	}
	return nil
}

// waitParent returns false when ctx ends, true when the parent process
// ppid has exited, polling every interval. On Unix an orphan is handed to
// another parent (init, or a subreaper), so a changed parent pid means
// the parent exited. It watches nothing when the parent is init already
// (a daemon) or on Windows, which does not hand orphans on.
func waitParent(ctx context.Context, ppid int, interval time.Duration) bool {
	if ppid <= 1 || runtime.GOOS == "windows" {
		<-ctx.Done()
		return false
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			if os.Getppid() != ppid {
				return true
			}
		}
	}
}
