package operator

import (
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/rollout"
)

// A rollout record is a ConfigMap that anyone who may write ConfigMaps in the records namespace
// may write, and the stable version it keeps is compiled and run as the policy. So a record is
// used only when rollout.Trust says so: the versions it names were loaded from the policy's
// labelled ConfigMap, by this process (rollout.Store.NoteLoaded) or by an earlier one, which
// listed them on that ConfigMap (rollout.Store.Anchor, rolloutDriver.putRecordLocked) before it
// wrote a record naming them. A record that is not trusted is reported, and the labelled version
// serves every parent.

// PolicyRolloutRecordRejected is the reason of the Warning event, on a policy's ConfigMap, that
// says its rollout record was not used.
const PolicyRolloutRecordRejected = "PolicyRolloutRecordRejected"

// inUse are the versions a running policy runs: the stable one, and the one rolling out.
func inUse(r *running) []string {
	if r == nil {
		return nil
	}
	if r.rollout != nil {
		return []string{r.version, r.rollout.target.version}
	}
	return []string{r.version}
}

// trustedStableLocked compiles the stable version a record keeps, for p loaded from st: nil when
// the record is not trusted (reported) or its source no longer compiles, and p then starts at once.
func (d *rolloutDriver) trustedStableLocked(p *policy.Compiled, st *unitState, rec *rollout.Record) *policy.Compiled {
	name := p.Name()
	logger := klog.FromContext(d.ctx).WithValues("policy", name, "record", d.records.Ref(name))
	loaded, err := d.records.Loaded(d.ctx, st.unit.ConfigMap, name)
	if err != nil {
		logger.Error(err, "Cannot check the rollout record; the newest version starts at once")
		return nil
	}
	var stable *policy.Compiled
	err = rollout.Trust(*rec, loaded, func() (*policy.Compiled, error) {
		var err error
		stable, err = d.compileRecorded(name, rec)
		return stable, err
	})
	switch {
	case errors.Is(err, rollout.ErrUntrusted):
		d.reportUntrustedRecord(logger, p, st, err)
		return nil
	case err != nil:
		logger.Error(err, "Cannot compile the stable version of the rollout record; the newest version starts at once", "version", policystatus.ShortVersion(rec.Stable))
		return nil
	}
	d.records.NoteLoaded(name, rec.Stable, rec.Stable, rec.Target, rollout.Version(p))
	return stable
}

// compileRecorded compiles the stable version a record keeps; an error when it no longer
// compiles (the cluster changed) or no longer defines the policy.
func (d *rolloutDriver) compileRecorded(name string, rec *rollout.Record) (*policy.Compiled, error) {
	compiled, err := policy.Load(rec.StableUnit, []byte(rec.StableSource), d.mapper)
	if err != nil {
		return nil, err
	}
	for _, c := range compiled {
		if c.Name() == name && len(missingResources(c)) == 0 {
			return c, nil
		}
	}
	return nil, errors.New("the record's source no longer defines the policy")
}

// reportUntrustedRecord says that a policy's rollout record was not used, and why: a log line,
// and a Warning event on the policy's ConfigMap. It is reported when the policy starts; the
// labelled version that then starts writes its own record over it (with sharding, the replica
// that drives the rollouts does), so it is not found again.
func (d *rolloutDriver) reportUntrustedRecord(logger klog.Logger, p *policy.Compiled, st *unitState, why error) {
	v := policystatus.ShortVersion(rollout.Version(p))
	logger.Error(why, "Rollout record not used; the version of the policy's ConfigMap serves every parent", "version", v)
	st.recordRejected = fmt.Sprintf("rollout record %s not used: %v", d.records.Ref(p.Name()), why)
	d.rolloutEvent(st.unit, "Warning", PolicyRolloutRecordRejected, fmt.Sprintf("policy %q: rollout record %s not used, version %s of this ConfigMap serves every parent: %v",
		p.Name(), d.records.Ref(p.Name()), v, why))
}
