package identity

import (
	"context"
	"fmt"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"
)

// How long an answer is kept: an allowance for a minute, so that a converged cluster asks about
// once per resource and minute; a refusal for 10 seconds, so that a role just granted is seen soon.
const (
	allowedTTL = time.Minute
	deniedTTL  = 10 * time.Second
)

// Read is one read a policy makes: verb (get, list) on an object of resource, in namespace ("":
// cluster-scoped), named name ("": any).
type Read struct {
	Verb      string
	Resource  schema.GroupVersionResource
	Namespace string
	Name      string
}

func (r Read) String() string {
	what := r.Resource.Resource
	if r.Resource.Group != "" {
		what += "." + r.Resource.Group
	}
	if r.Name != "" {
		what += fmt.Sprintf(" %q", r.Name)
	}
	if r.Namespace != "" {
		what += fmt.Sprintf(" in namespace %q", r.Namespace)
	}
	return r.Verb + " " + what
}

// ForbiddenError is a read the policy's ServiceAccount may not make.
type ForbiddenError struct {
	ServiceAccount ServiceAccount
	Read           Read
	// Reason is the authorizer's, when it gave one
	Reason string
}

func (e *ForbiddenError) Error() string {
	msg := fmt.Sprintf("the policy's ServiceAccount %q may not %s: grant it that in a Role or ClusterRole "+
		"(metacel rbac prints what the policy needs)", e.ServiceAccount.String(), e.Read.String())
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg
}

// Reviewer asks the API server, with SubjectAccessReviews, whether ServiceAccounts may read
// objects, and keeps the answers for a while.
type Reviewer struct {
	reviews authorizationclient.SubjectAccessReviewInterface
	clock   clock.PassiveClock

	mu      sync.Mutex
	answers map[answerKey]answer
}

type answerKey struct {
	user string
	read Read
}

type answer struct {
	allowed bool
	reason  string
	expires time.Time
}

// NewReviewer returns a Reviewer that asks through reviews.
func NewReviewer(reviews authorizationclient.SubjectAccessReviewInterface, clk clock.PassiveClock) *Reviewer {
	return &Reviewer{reviews: reviews, clock: clk, answers: map[answerKey]answer{}}
}

// Check returns nil when sa may make read, a *ForbiddenError when it may not, another error when
// the API server could not say. An allowance over the whole cluster, or the whole namespace,
// covers every object in it: those are asked first, as most roles grant them.
func (r *Reviewer) Check(ctx context.Context, sa ServiceAccount, read Read) error {
	var last answer
	for _, scope := range scopes(read) {
		a, err := r.answer(ctx, sa, scope)
		if err != nil {
			return err
		}
		if a.allowed {
			return nil
		}
		last = a
	}
	return &ForbiddenError{ServiceAccount: sa, Read: read, Reason: last.reason}
}

// scopes are the reads that would allow read, widest first: the resource in every namespace, in
// read's namespace, then the object itself.
func scopes(read Read) []Read {
	out := []Read{}
	if read.Namespace != "" {
		out = append(out, Read{Verb: read.Verb, Resource: read.Resource})
	}
	wide := read
	wide.Name = ""
	out = append(out, wide)
	if read.Name != "" {
		out = append(out, read)
	}
	return out
}

// answer is the kept answer for read, else the API server's.
func (r *Reviewer) answer(ctx context.Context, sa ServiceAccount, read Read) (answer, error) {
	key := answerKey{user: sa.UserName(), read: read}
	now := r.clock.Now()
	r.mu.Lock()
	a, ok := r.answers[key]
	r.mu.Unlock()
	if ok && now.Before(a.expires) {
		return a, nil
	}
	a, err := r.ask(ctx, sa, read)
	if err != nil {
		return answer{}, err
	}
	a.expires = now.Add(deniedTTL)
	if a.allowed {
		a.expires = now.Add(allowedTTL)
	}
	r.mu.Lock()
	r.forgetExpiredLocked(now)
	r.answers[key] = a
	r.mu.Unlock()
	return a, nil
}

// ask sends one SubjectAccessReview.
func (r *Reviewer) ask(ctx context.Context, sa ServiceAccount, read Read) (answer, error) {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   sa.UserName(),
		Groups: sa.Groups(),
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: read.Verb, Group: read.Resource.Group, Version: read.Resource.Version,
			Resource: read.Resource.Resource, Namespace: read.Namespace, Name: read.Name,
		},
	}}
	got, err := r.reviews.Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return answer{}, fmt.Errorf("ask whether %q may %s: %w", sa.String(), read.String(), err)
	}
	return answer{allowed: got.Status.Allowed && !got.Status.Denied, reason: got.Status.Reason}, nil
}

// maxAnswers bounds the answers kept: past it, the expired ones are dropped, and if that is not
// enough, all of them (they are asked again).
const maxAnswers = 4096

func (r *Reviewer) forgetExpiredLocked(now time.Time) {
	if len(r.answers) < maxAnswers {
		return
	}
	for k, a := range r.answers {
		if !now.Before(a.expires) {
			delete(r.answers, k)
		}
	}
	if len(r.answers) >= maxAnswers {
		clear(r.answers)
	}
}
