//go:build e2e

package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"time"
)

// The no-op policy change: metacel's policy file rewritten with an annotation on the policy that
// nothing reads. The runtime takes it for the version it runs (a policy's version leaves out the
// labels and annotations of its metadata that the runtime does not read): nothing starts again,
// nothing is synced, nothing is written. A runtime before that (-metacel) took it as a new
// version: a new controller replaced the running one, synced every parent (each an informer event
// to it) and rendered every child and status as before. The other controllers get their file of
// child labels rewritten as it is, and a SIGHUP: they sync every parent again with the same
// labels.
const (
	noopAnnotation = "metacel-bench/no-op"
	noopValue      = "1"
)

// policyMetadata is the policy's own metadata: the one line "metadata:" at the start of a line.
var policyMetadata = regexp.MustCompile(`(?m)^metadata:\n`)

// reviseNoop is a policy with noopAnnotation among its own annotations (the policy has none).
func reviseNoop(policy []byte) ([]byte, error) {
	if len(policyMetadata.FindAll(policy, -1)) != 1 {
		return nil, fmt.Errorf("want exactly one metadata: at the start of a line, the policy's own")
	}
	return policyMetadata.ReplaceAll(policy, []byte("metadata:\n  annotations:\n    "+noopAnnotation+": \""+noopValue+"\"\n")), nil
}

// noopNA says why a controller's no-op change is not measured ("": it is).
func noopNA(ctl string) string {
	if ctl == kopfPython {
		return "n/a: its SIGHUP handles every MyApp again, replacing its Pod"
	}
	return ""
}

// noopResult is a no-op policy change's figures.
type noopResult struct {
	na string // why it was not measured ("": it was)
	// took: from telling the controller until it had synced every parent (decidedAll); reloaded:
	// until metacel's policy had its new generation
	took, reloaded time.Duration
	syncs          float64 // the controller's syncs until quiet
	requests       counts  // the controller's requests until quiet
}

// noopContent is what the no-op change writes to the file at path: metacel's policy with
// reviseNoop, the other controllers' file of child labels as it is.
func noopContent(p *proc, path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil || p.kind != metacel {
		return raw, err
	}
	return reviseNoop(raw)
}

// noopChange tells the controller the no-op change and measures the time until it has synced
// every parent under it, and its requests until quiet.
func (b *bench) noopChange(ctx context.Context, s *stage, p *proc, path string) (noopResult, error) {
	res := noopResult{na: noopNA(p.kind)}
	if res.na != "" {
		return res, nil
	}
	content, err := noopContent(p, path)
	if err != nil {
		return res, err
	}
	from, err := p.progress(ctx)
	if err != nil {
		return res, err
	}
	w0, err := s.cl.window(ctx, s.own, p)
	if err != nil {
		return res, err
	}
	start, err := tellFile(p, path, content)
	if err != nil {
		return res, err
	}
	deadline := time.Now().Add(b.o.timeout)
	for res.took == 0 {
		if err := p.alive(); err != nil {
			return res, err
		}
		if now, err := p.progress(ctx); err == nil {
			if p.kind == metacel && res.reloaded == 0 && now.generation != from.generation {
				res.reloaded = time.Since(start)
			}
			if decidedAll(p.kind, from, now, b.o.parents) {
				res.took = time.Since(start)
				break
			}
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("no-op policy change: not every parent synced after %s (log: %s)", b.o.timeout, p.log)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	w1, err := b.waitQuiet(ctx, s.cl, s.own, work, p)
	if err != nil {
		return res, err
	}
	res.syncs = w1.syncs - w0.syncs
	res.requests, _, err = s.cl.attribute(w0, w1)
	return res, err
}
