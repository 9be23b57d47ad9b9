// Package group is the runner of a group of instances (docs/scale-out.md):
// several processes running one pipeline whose source has assignment:
// group, sharing it through a Kafka consumer group. It sits beside the
// direct runner (package engine) in the runner layer: the face
// (tidemark.Run, the run, backfill and bench commands) sets Run as
// engine.Options.Group, and engine.Run hands it every such plan. Of the
// direct runner it uses the per-record path of one partition
// (engine.PartRouter), the sinks' registry and encoders, the spec
// comparison and the Summary and Live types it fills; the engine imports
// nothing of it.
//
// Files: kafka.go is the Kafka runner of an instance (session,
// assignment, commit point, bounded end, spec check of a joining
// instance, rejoining); task.go its source and keyed tasks and their
// watermark markers; checkpoint.go their checkpoints as immutable objects
// of a checkpoint.TaskStore; instance.go the tasks an instance holds;
// live.go its snapshots; fence.go FencedError.
//
// An instance joins the consumer group with franz-go's GroupTransactSession and the
// cooperative-sticky balancer, subscribed to the input topics and the
// pipeline's repartition topic; it runs the source task of every input
// partition and the keyed task of every repartition partition the group
// gives it (task.go), on one goroutine. Everything an instance
// produces between two checkpoints — records of the repartition topic,
// rows and records of Kafka sinks — is one Kafka transaction, which also
// commits the consumed offsets, each with the name of its task's new
// checkpoint manifest as the offset's metadata (TxnOffsetCommit with the
// group generation: a fenced former owner cannot commit). So one commit
// point covers offsets, state and output. PostgreSQL sinks stage their
// rows in the task's checkpoint and commit them, with a commit marker
// per task, once the transaction committed (their Recover finishes a
// commit a crash interrupted). A rebalance during a transaction aborts
// it (the session's rule); the instance then drops every task and starts
// those it holds again from their committed checkpoints, and the session
// rewinds to the committed offsets.
package group
