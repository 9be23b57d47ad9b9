//go:build unix

package cli

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDevKafkaHelper is not a test: run by TestDevKafkaStopsWithItsParent
// as a child process (TIDEMARK_DEV_KAFKA_CHILD set), it is `tidemark
// dev-kafka` with the flags in that variable.
func TestDevKafkaHelper(t *testing.T) {
	args := os.Getenv("TIDEMARK_DEV_KAFKA_CHILD")
	if args == "" {
		t.Skip("a child process of TestDevKafkaStopsWithItsParent")
	}
	os.Exit(Main(append([]string{"dev-kafka"}, strings.Fields(args)...), strings.NewReader(""), os.Stdout, os.Stderr))
}

// TestDevKafkaStopsWithItsParent: dev-kafka started by a process that is
// then killed with SIGKILL (as when `go run` is stopped by its PID, or a
// script is killed) stops listening and exits; with --outlive-parent it
// keeps running.
func TestDevKafkaStopsWithItsParent(t *testing.T) {
	for _, outlive := range []bool{false, true} {
		flags := "--addr 127.0.0.1:0 --registry-addr 127.0.0.1:0 --partitions 1"
		if outlive {
			flags += " --outlive-parent"
		}
		// The parent: a shell that starts the broker, prints its pid and
		// waits for it.
		sh := exec.Command("sh", "-c", `"$0" -test.run='^TestDevKafkaHelper$' & echo $!; wait`, os.Args[0])
		sh.Env = append(os.Environ(), "TIDEMARK_DEV_KAFKA_CHILD="+flags)
		// Pipes of our own, so that nothing waits on the broker's copies
		// of them, and EOF on out says every writer (the broker) is gone.
		out, outW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		errR, errW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		sh.Stdout, sh.Stderr = outW, errW
		if err := sh.Start(); err != nil {
			t.Fatal(err)
		}
		outW.Close()
		errW.Close()
		var stderr syncBuffer
		stderrDone := make(chan struct{})
		go func() { io.Copy(&stderr, errR); close(stderrDone) }()
		r := bufio.NewReader(out)
		pidLine, _ := r.ReadString('\n')
		pid, err := strconv.Atoi(strings.TrimSpace(pidLine))
		if err != nil {
			sh.Process.Kill()
			t.Fatalf("first line %q", pidLine)
		}
		defer syscall.Kill(pid, syscall.SIGKILL)
		listen, _ := r.ReadString('\n')
		addr, ok := strings.CutPrefix(strings.TrimSpace(listen), "kafka listening on ")
		if !ok {
			sh.Process.Kill()
			t.Fatalf("second line %q; stderr %s", listen, stderr.String())
		}
		sh.Process.Kill() // SIGKILL: the parent cannot pass anything on
		sh.Wait()
		defer out.Close()
		defer errR.Close()

		// The broker's stdout (inherited from the shell) reaches EOF when
		// the broker exits.
		eof := make(chan struct{})
		go func() { io.Copy(io.Discard, r); close(eof) }()
		select {
		case <-eof:
			<-stderrDone
			if outlive {
				t.Fatalf("--outlive-parent: the broker exited with its parent; stderr %s", stderr.String())
			}
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Fatalf("%s still accepts connections after the broker exited", addr)
			}
			if !strings.Contains(stderr.String(), "dev-kafka: the process that started it (pid ") || !strings.Contains(stderr.String(), "dev-kafka: stopped") {
				t.Errorf("stderr does not say why it stopped:\n%s", stderr.String())
			}
		case <-time.After(3 * time.Second):
			if !outlive {
				t.Fatalf("the broker still runs 3s after its parent was killed; stderr %s", stderr.String())
			}
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				t.Fatalf("--outlive-parent: %s: %v", addr, err)
			}
			c.Close()
			syscall.Kill(pid, syscall.SIGTERM)
			select {
			case <-eof:
				<-stderrDone
			case <-time.After(5 * time.Second):
				t.Fatal("--outlive-parent: still running 5s after SIGTERM")
			}
		}
	}
}

// TestDevKafkaGroupMinSessionTimeout: a JoinGroup asking for a 1 s session
// is refused with INVALID_SESSION_TIMEOUT by default (Kafka's 6 s
// group.min.session.timeout.ms) and accepted with
// --group-min-session-timeout 500ms; the flag's bad values exit 2.
func TestDevKafkaGroupMinSessionTimeout(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  error
	}{
		{nil, kerr.InvalidSessionTimeout},
		{[]string{"--group-min-session-timeout", "500ms"}, kerr.MemberIDRequired}, // the first step of an accepted join (v4+)
	} {
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		var errb syncBuffer
		root := newRoot(strings.NewReader(""), pw, &errb)
		root.SetArgs(append([]string{"dev-kafka", "--addr", "127.0.0.1:0", "--registry-addr", "", "--topic", "t", "-q"}, tc.flags...))
		done := make(chan error, 1)
		go func() {
			err := root.ExecuteContext(ctx)
			pw.Close()
			done <- err
		}()
		line, _ := bufio.NewReader(pr).ReadString('\n')
		go io.Copy(io.Discard, pr)
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "kafka listening on ")
		if !ok {
			cancel()
			t.Fatalf("%v: first line %q (%v); stderr %s", tc.flags, line, <-done, errb.String())
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = "g", 1000, 5000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)
		req.Protocols = append(req.Protocols, p)
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := req.RequestWith(rctx, cl)
		rcancel()
		cl.Close()
		cancel()
		if derr := <-done; derr != nil {
			t.Errorf("%v: dev-kafka returned %v", tc.flags, derr)
		}
		if err != nil {
			t.Fatalf("%v: JoinGroup: %v", tc.flags, err)
		}
		if got := kerr.ErrorForCode(resp.ErrorCode); got != tc.want {
			t.Errorf("%v: JoinGroup with a 1 s session: %v, want %v", tc.flags, got, tc.want)
		}
	}
	for _, bad := range []string{"0s", "-1s"} {
		code, _, stderr := run(t, "dev-kafka", "--addr", "127.0.0.1:0", "--group-min-session-timeout", bad)
		if code != 2 || !strings.Contains(stderr, "--group-min-session-timeout "+bad+": must be at least 1ms") {
			t.Errorf("--group-min-session-timeout %s: exit %d, stderr %q", bad, code, stderr)
		}
	}
}
