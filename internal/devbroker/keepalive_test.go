package devbroker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinReq is a JoinGroup of static member instance with a 300 ms session
// and a 5 s rebalance timeout.
func joinReq(instance, member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.InstanceID, req.MemberID = "g", kmsg.StringPtr(instance), member
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 300, 5000
	req.ProtocolType = "test"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "p", []byte{}
	req.Protocols = append(req.Protocols, p)
	return req
}

// TestKeepJoinersAlive: member c's second JoinGroup waits 1 s for member a to
// rejoin — a live member (it heartbeats) that is slow to — which is
// longer than c's 300 ms session. On Kafka, and on kfake with
// KeepJoinersAlive, c stays in the group: the rebalance completes when a
// rejoins, with both members, and c's JoinGroup is answered. Without it
// kfake expired c while it waited and never answered its JoinGroup.
func TestKeepJoinersAlive(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := KeepJoinersAlive(ctx, c, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	client := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ca, cc := client(), client()

	// a and c: generation 2, stable once both synced.
	ja, err := joinReq("a", "").RequestWith(ctx, ca) // alone: generation 1
	if err != nil || ja.ErrorCode != 0 {
		t.Fatalf("a's join: %v %v", err, kerr.ErrorForCode(ja.ErrorCode))
	}
	type answer struct {
		resp *kmsg.JoinGroupResponse
		err  error
	}
	join := func(cl *kgo.Client, req *kmsg.JoinGroupRequest) chan answer {
		ch := make(chan answer, 1)
		go func() {
			jctx, jcancel := context.WithTimeout(ctx, 4*time.Second)
			defer jcancel()
			resp, err := req.RequestWith(jctx, cl)
			ch <- answer{resp, err}
		}()
		return ch
	}
	sync := func(cl *kgo.Client, instance string, j *kmsg.JoinGroupResponse) error {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.InstanceID, req.MemberID, req.Generation = "g", kmsg.StringPtr(instance), j.MemberID, j.Generation
		req.ProtocolType, req.Protocol = kmsg.StringPtr("test"), kmsg.StringPtr("p")
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			return fmt.Errorf("%s's sync: %w", instance, err)
		}
		return nil
	}
	cFirst := join(cc, joinReq("c", ""))
	time.Sleep(50 * time.Millisecond)
	ja, err = joinReq("a", ja.MemberID).RequestWith(ctx, ca)
	if err != nil || ja.ErrorCode != 0 || ja.Generation != 2 {
		t.Fatalf("a's second join: %v %+v", err, ja)
	}
	jc := <-cFirst
	if jc.err != nil || jc.resp.ErrorCode != 0 || jc.resp.Generation != 2 {
		t.Fatalf("c's first join: %v %+v", jc.err, jc.resp)
	}
	synced := make(chan error, 1)
	go func() { synced <- sync(ca, "a", ja) }()
	if err := errors.Join(sync(cc, "c", jc.resp), <-synced); err != nil {
		t.Fatal(err)
	}

	// c joins again with other metadata (a rebalance): the group waits
	// for a to rejoin, c's session timer running since its sync.
	rejoin := joinReq("c", jc.resp.MemberID)
	rejoin.Protocols[0].Metadata = []byte{1}
	cJoined := join(cc, rejoin)
	// a heartbeats for 1 s (REBALANCE_IN_PROGRESS), then rejoins.
	for start := time.Now(); time.Since(start) < time.Second; time.Sleep(50 * time.Millisecond) {
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.InstanceID, hb.MemberID, hb.Generation = "g", kmsg.StringPtr("a"), ja.MemberID, ja.Generation
		if _, err := hb.RequestWith(ctx, ca); err != nil {
			t.Fatal(err)
		}
	}
	ja2, err := joinReq("a", ja.MemberID).RequestWith(ctx, ca)
	if err != nil || ja2.ErrorCode != 0 {
		t.Fatalf("a's rejoin: %v %v", err, kerr.ErrorForCode(ja2.ErrorCode))
	}
	if len(ja2.Members) != 2 || ja2.Generation != 3 {
		t.Errorf("a's rejoin: generation %d with %d members, want generation 3 with a and c", ja2.Generation, len(ja2.Members))
	}
	select {
	case a := <-cJoined:
		if a.err != nil || a.resp.ErrorCode != 0 || a.resp.Generation != 3 {
			t.Errorf("c's join: %v, %+v; want generation 3", a.err, a.resp)
		}
	case <-time.After(3 * time.Second):
		t.Errorf("c's join not answered 3 s after the rebalance completed")
	}
}
