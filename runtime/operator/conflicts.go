package operator

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/ledger"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/rollout"
)

// A claim is a policy of a unit that may run (it loaded, and the cluster serves its resources):
// it claims its name and its parent resource. Of the claims on one name or one parent resource,
// one runs. Which one is decided from what the API server holds, never from the order this
// process happened to load them in (a counter in memory, a map's order): every replica decides
// alike, and so does the runtime after a restart or a leader change, so the policy rejected once
// never takes the parents over from the one that runs. In order (claimRank, inClaimOrder):
//
//  0. the claim this process runs, from its unit: the one that runs keeps running;
//  1. a policy whose rollout record does not say it stopped (rollout.Record.Stopped, written
//     when a running policy is removed from every source) before one whose does: a policy that comes back
//     (its old ConfigMap applied again) does not take the parents from the one that replaced it,
//     though its Lease is older;
//  2. the claim from the unit that the policy's rollout record names as its stable version's
//     (written whenever a version starts: it runs, or ran last, from there) before one from
//     elsewhere: of two keys that define one policy, the one that runs keeps it;
//  3. a policy that has run in the cluster (its ledger Lease exists: its controller creates it
//     when it starts, package ledger) before one that never has: the policy rejected never ran;
//  4. of two that have, the one whose Lease is older: it ran first;
//  5. the unit's name (configmap/<namespace>/<name>/<key>, or the file's path), then the
//     policy's place in it: the same on every replica.
//
// The rollout record and the ledger are the runtime's own objects, already read and written for
// each policy; a Lease's creationTimestamp is set by the API server, and neither is rewritten
// when the policy's ConfigMap is (kubectl replace, a Helm upgrade), which its own
// creationTimestamp would be. A claim whose rank cannot be read ranks first if it runs, so that a
// failed read never moves the parents.
type claim struct {
	policy *policy.Compiled
	unit   *unitState
	place  int // in the unit
}

// claimKey names a claim: its unit and its policy.
type claimKey struct{ unit, policy string }

func (c claim) key() claimKey { return claimKey{c.unit.unit.Name, c.policy.Name()} }

// claimRank is what this process and the API server say of a claim (claim's rules 0 to 4).
type claimRank struct {
	// runsHere: the policy runs, in this process, from the claim's unit
	runsHere bool
	// stopped: the policy's rollout record says it left the running policies
	stopped bool
	// recordedHere: the policy's rollout record names the claim's unit
	recordedHere bool
	// ran: the policy has run in the cluster, first at since
	ran   bool
	since time.Time
}

// claimsOf are the claims of every unit, by unit name and place.
func claimsOf(units map[string]*unitState) []claim {
	var out []claim
	for _, st := range byUnitName(units) {
		for i, p := range st.good {
			if missingResources(p) == nil {
				out = append(out, claim{policy: p, unit: st, place: i})
			}
		}
	}
	return out
}

// inClaimOrder sorts claims by rank (claim's rules), the first winning a conflict.
func inClaimOrder(claims []claim, ranks map[claimKey]claimRank) []claim {
	out := slices.Clone(claims)
	slices.SortStableFunc(out, func(a, b claim) int {
		ra, rb := ranks[a.key()], ranks[b.key()]
		switch {
		case ra.runsHere != rb.runsHere:
			return boolFirst(ra.runsHere)
		case ra.stopped != rb.stopped:
			return boolFirst(!ra.stopped)
		case ra.recordedHere != rb.recordedHere:
			return boolFirst(ra.recordedHere)
		case ra.ran != rb.ran:
			return boolFirst(ra.ran)
		case !ra.since.Equal(rb.since):
			return ra.since.Compare(rb.since)
		case a.unit.unit.Name != b.unit.unit.Name:
			return strings.Compare(a.unit.unit.Name, b.unit.unit.Name)
		}
		return a.place - b.place
	})
	return out
}

// boolFirst orders true before false: -1 for true.
func boolFirst(b bool) int {
	if b {
		return -1
	}
	return 1
}

// claimRanker reads the ranks of claims: what this process runs (runningUnit: the unit a policy
// runs from, "" when it does not run), and from the API server the policies' rollout records
// and ledger Leases.
type claimRanker struct {
	ctx         context.Context
	records     *rollout.Store
	ledger      *ledger.Ledger
	runningUnit func(policy string) string
}

// ranks reads the ranks of the claims in a conflict (one name, or one parent resource, claimed
// more than once); the others need none.
func (k claimRanker) ranks(claims []claim) map[claimKey]claimRank {
	out := map[claimKey]claimRank{}
	stable := map[string]string{} // the unit of each policy's rollout record
	firstRan := map[string]claimRank{}
	for _, c := range conflicting(claims) {
		name := c.policy.Name()
		if _, read := firstRan[name]; !read {
			unit, rank, err := k.read(name)
			if err != nil {
				klog.FromContext(k.ctx).Error(err, "Cannot read which of two conflicting policies runs; the running one keeps running", "policy", name)
			}
			stable[name], firstRan[name] = unit, rank
		}
		rank := firstRan[name]
		rank.recordedHere = stable[name] == c.unit.unit.Name
		rank.runsHere = k.runningUnit(name) == c.unit.unit.Name
		out[c.key()] = rank
	}
	return out
}

// read reads the unit a policy's rollout record names and when its ledger says it first ran;
// when either cannot be read, the policy ranks as its running version says (the unit it runs
// from, first of all that ran), and the error is returned.
func (k claimRanker) read(name string) (unit string, rank claimRank, err error) {
	rec, recErr := k.records.Get(k.ctx, name)
	since, ran, ledgerErr := k.ledger.FirstRecorded(k.ctx, name)
	if err := errors.Join(recErr, ledgerErr); err != nil {
		unit = k.runningUnit(name)
		return unit, claimRank{ran: unit != ""}, err
	}
	if rec != nil {
		unit = rec.StableUnit
	}
	return unit, claimRank{ran: ran, since: since, stopped: rec != nil && rec.Stopped}, nil
}

// conflicting are the claims that share their policy's name or parent resource with another.
func conflicting(claims []claim) []claim {
	byName := map[string]int{}
	byParent := map[schema.GroupResource]int{}
	for _, c := range claims {
		byName[c.policy.Name()]++
		byParent[c.policy.Parent.GVR.GroupResource()]++
	}
	var out []claim
	for _, c := range claims {
		if byName[c.policy.Name()] > 1 || byParent[c.policy.Parent.GVR.GroupResource()] > 1 {
			out = append(out, c)
		}
	}
	return out
}
