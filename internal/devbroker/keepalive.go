// Package devbroker holds what tidemark adds to franz-go's kfake broker
// (the broker of `tidemark dev-kafka` and of the Kafka tests) so that
// consumer groups behave there as they do on Kafka.
package devbroker

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KeepJoinersAlive makes the cluster keep the session of a classic
// consumer-group member alive while its JoinGroup or SyncGroup waits for
// a rebalance to complete, until ctx ends.
//
// Kafka does so: its group coordinator never expires a member that is
// awaiting a JoinGroup or SyncGroup response (GroupCoordinator's
// shouldKeepAlive), so a rebalance that waits for a slow or dead member
// (up to the rebalance timeout) never drops the members already waiting.
// kfake (franz-go/pkg/kfake, v0.0.0-20260918054303) keeps running the
// session timer of a waiting member: when the rebalance lasts longer
// than the member's session timeout — an instance killed with SIGKILL
// is only noticed after its own session timeout, so a rebalance that
// follows a kill always lasts about that long — kfake removes the
// waiting member without answering its JoinGroup, the group completes
// the rebalance without it, and its client waits for the response until
// its request timeout (rebalance timeout + 10 s) while believing it
// still owns its partitions.
//
// KeepJoinersAlive observes JoinGroup, SyncGroup and LeaveGroup
// requests (control functions that let the cluster handle them) and,
// every interval, sends a Heartbeat of the current generation on behalf
// of each member that waits: one that sent a JoinGroup, while its group
// is in the PreparingRebalance it joined, and one that sent a SyncGroup,
// while its group is CompletingRebalance at that generation (followers
// wait there for the leader's assignment, up to the rebalance timeout if
// the leader died). kfake's heartbeat handler then restarts the member's
// session timer, as Kafka's coordinator does for a waiting member. A
// joining member is forgotten once that rebalance completed (its group
// left PreparingRebalance or changed generation: its join was answered),
// when it sends a SyncGroup (then waits in it) or a LeaveGroup, when its
// group is outside PreparingRebalance at three ticks in a row before
// any rebalance was seen (a join answered at once), and when it is not
// in its group at two ticks in a row; a syncing member once its group
// left that CompletingRebalance. A dead member is thus kept at most until
// the step it waited in completes, as on Kafka. The heartbeats'
// responses are ignored: REBALANCE_IN_PROGRESS is the expected answer
// to a joining member's, and any other means the member no longer waits.
func KeepJoinersAlive(ctx context.Context, c *kfake.Cluster, interval time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		return err
	}
	k := &keeper{c: c, cl: cl, joiners: map[joinerKey]*joiner{}}
	c.ControlKey(int16(kmsg.JoinGroup), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if req, ok := kreq.(*kmsg.JoinGroupRequest); ok && (req.MemberID != "" || req.InstanceID != nil) {
			k.set(req.Group, req.MemberID, req.InstanceID, &joiner{gen: -1})
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.SyncGroup), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if req, ok := kreq.(*kmsg.SyncGroupRequest); ok {
			k.set(req.Group, req.MemberID, req.InstanceID, &joiner{gen: -1, syncing: true, syncGen: req.Generation})
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.LeaveGroup), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if req, ok := kreq.(*kmsg.LeaveGroupRequest); ok {
			k.set(req.Group, req.MemberID, nil, nil)
			for _, m := range req.Members {
				k.set(req.Group, m.MemberID, m.InstanceID, nil)
			}
		}
		return nil, nil, false
	})
	go func() {
		defer cl.Close()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				k.tick(ctx)
			}
		}
	}()
	return nil
}

type joinerKey struct {
	group, member, instance string
}

// keeper tracks the members waiting in a join.
type keeper struct {
	c       *kfake.Cluster
	cl      *kgo.Client
	mu      sync.Mutex
	joiners map[joinerKey]*joiner
}

// joiner is a member that sent a JoinGroup.
type joiner struct {
	gen     int32 // the generation whose rebalance it waits in; -1 before one was seen
	outside int   // ticks its group was seen outside PreparingRebalance before
	missing int   // ticks it was not found in its group
	// syncing: it sent a SyncGroup of generation syncGen, and waits
	// while its group is CompletingRebalance at that generation.
	syncing bool
	syncGen int32
}

// set records that a member sent a JoinGroup or a SyncGroup (j), or a
// LeaveGroup (nil).
func (k *keeper) set(group, member string, instance *string, j *joiner) {
	key := joinerKey{group: group, member: member}
	if instance != nil {
		// A static member may join with an empty member id (a restart):
		// it is known by its instance id.
		key = joinerKey{group: group, instance: *instance}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if j != nil {
		k.joiners[key] = j
		return
	}
	delete(k.joiners, key)
	if instance != nil && member != "" {
		delete(k.joiners, joinerKey{group: group, member: member})
	}
}

// tick heartbeats for every member still waiting in a join.
func (k *keeper) tick(ctx context.Context) {
	k.mu.Lock()
	keys := make([]joinerKey, 0, len(k.joiners))
	for key := range k.joiners {
		keys = append(keys, key)
	}
	k.mu.Unlock()
	var wg sync.WaitGroup
	infos := map[string]*kfake.GroupInfo{}
	for _, key := range keys {
		info, ok := infos[key.group]
		if !ok {
			info = k.c.GroupInfo(key.group)
			infos[key.group] = info
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group = key.group
		if info != nil {
			req.Generation = info.Epoch
			for _, m := range info.Members {
				switch {
				case key.instance != "" && m.InstanceID != nil && *m.InstanceID == key.instance:
					req.MemberID, req.InstanceID = m.MemberID, kmsg.StringPtr(key.instance)
				case key.instance == "" && m.MemberID == key.member:
					req.MemberID = m.MemberID
				}
			}
		}
		k.mu.Lock()
		j := k.joiners[key]
		switch {
		case j == nil:
		case req.MemberID == "" && j.syncing:
			delete(k.joiners, key)
			j = nil
		case j.syncing:
			if info.State != "CompletingRebalance" || info.Epoch != j.syncGen {
				delete(k.joiners, key) // its SyncGroup was answered
				j = nil
			}
		case req.MemberID == "":
			// Not a member (any more): forgotten at the second tick (at
			// the first, the cluster may not have handled its join yet).
			if j.missing++; j.missing >= 2 {
				delete(k.joiners, key)
			}
			j = nil
		case info.State == "PreparingRebalance" && (j.gen < 0 || j.gen == info.Epoch):
			j.gen = info.Epoch // waiting in this rebalance
		case j.gen >= 0:
			// The rebalance it waited in completed: its join was answered.
			delete(k.joiners, key)
			j = nil
		default:
			// Never seen waiting: its join was answered at once.
			if j.outside++; j.outside >= 3 {
				delete(k.joiners, key)
			}
			j = nil
		}
		k.mu.Unlock()
		if j == nil {
			continue
		}
		// Each heartbeat on its own goroutine: kfake may hold one back
		// while its group changes state, and a held heartbeat must not
		// delay the others' (a member's session is a few of these ticks).
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, _ = req.RequestWith(rctx, k.cl)
		}()
	}
	wg.Wait()
}
