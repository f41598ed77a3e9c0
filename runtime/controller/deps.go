package controller

import (
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/identity"
	"metacel.dev/metacel/runtime/informers"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/ledger"
	"metacel.dev/metacel/runtime/policy"
)

// Deps are what every controller shares.
type Deps struct {
	Pool *informers.Pool
	// Ledger keeps what the controller must know across restarts (nil: off)
	Ledger *ledger.Ledger
	Writer *apply.Writer
	// ReservedNamespace is the namespace of the runtime's own records (its policies, rollout
	// records, memos, ledger): no child is ever written there ("": none)
	ReservedNamespace string
	Mapper            kinds.Mapper
	Recorder          events.EventRecorder
	Metrics           *Metrics
	Clock             clock.Clock
	// OnSync, when set, is told of every sync of a parent this controller holds, with when it
	// began and ended (tests record them, to check that no two replicas sync one parent at once)
	OnSync func(policy, key string, start, end time.Time)
	// Pace bounds the bookkeeping patches of all controllers (nil: unbounded)
	Pace *BookkeepingPace
	// ActAs, when set, gives the identity each policy acts as (its ServiceAccount): its writes go
	// through the identity's Writer instead of Writer, its reads are checked (access.go)
	ActAs func(*policy.Compiled) (Identity, error)
}

// Identity is who a policy acts as: its ServiceAccount (package identity). Every write of the
// policy goes through Writer, which impersonates it; every object a sync reads for the policy from
// the runtime's shared caches is first checked with Reviewer. A zero ServiceAccount is the
// runtime's own identity: its reads are not checked.
type Identity struct {
	Writer         *apply.Writer
	ServiceAccount identity.ServiceAccount
	Reviewer       *identity.Reviewer
}
