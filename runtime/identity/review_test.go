package identity

import (
	"context"
	"errors"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// grants answers reviews as RBAC would with these allowances: "verb resource namespace name",
// "" fields matching only the empty value (a grant over a namespace is asked with no name).
type grants map[Read]bool

func reviewer(t *testing.T, g grants) (*Reviewer, *clocktesting.FakePassiveClock, *int) {
	t.Helper()
	client := fake.NewClientset()
	asked := 0
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		asked++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		if sar.Spec.User != "system:serviceaccount:metacel-system:app" || len(sar.Spec.Groups) == 0 {
			return true, nil, errors.New("reviewed the wrong user")
		}
		ra := sar.Spec.ResourceAttributes
		read := Read{Verb: ra.Verb, Resource: schema.GroupVersionResource{Group: ra.Group, Version: ra.Version, Resource: ra.Resource}, Namespace: ra.Namespace, Name: ra.Name}
		sar.Status.Allowed = g[read]
		return true, sar, nil
	})
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	return NewReviewer(client.AuthorizationV1().SubjectAccessReviews(), clk), clk, &asked
}

var app = ServiceAccount{Namespace: "metacel-system", Name: "app"}

func TestReviewerCheck(t *testing.T) {
	source := Read{Verb: "get", Resource: configMaps, Namespace: "team-a", Name: "source"}
	tests := []struct {
		name    string
		grants  grants
		read    Read
		allowed bool
		asked   int
	}{
		{"a cluster-wide grant covers every object, asked once", grants{{Verb: "get", Resource: configMaps}: true}, source, true, 1},
		{"a namespace's grant covers its objects", grants{{Verb: "get", Resource: configMaps, Namespace: "team-a"}: true}, source, true, 2},
		{"a grant of one name covers that object", grants{source: true}, source, true, 3},
		{"another namespace's grant does not", grants{{Verb: "get", Resource: configMaps, Namespace: "team-b"}: true}, source, false, 3},
		{"another verb's grant does not", grants{{Verb: "list", Resource: configMaps}: true}, source, false, 3},
		{"no grant is forbidden", grants{}, source, false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _, asked := reviewer(t, tt.grants)
			err := r.Check(context.Background(), app, tt.read)
			var forbidden *ForbiddenError
			if tt.allowed != (err == nil) || !tt.allowed && !errors.As(err, &forbidden) {
				t.Fatalf("Check: %v, want allowed %v", err, tt.allowed)
			}
			if *asked != tt.asked {
				t.Errorf("asked %d reviews, want %d", *asked, tt.asked)
			}
		})
	}
}

func TestReviewerKeepsAnswers(t *testing.T) {
	read := Read{Verb: "get", Resource: configMaps, Namespace: "team-a", Name: "source"}
	r, clk, asked := reviewer(t, grants{{Verb: "get", Resource: configMaps}: true})
	ctx := context.Background()
	for range 3 {
		if err := r.Check(ctx, app, read); err != nil {
			t.Fatal(err)
		}
	}
	if *asked != 1 {
		t.Fatalf("an allowance is kept: asked %d reviews, want 1", *asked)
	}
	clk.SetTime(clk.Now().Add(allowedTTL))
	_ = r.Check(ctx, app, read)
	if *asked != 2 {
		t.Fatalf("an allowance expires after %v: asked %d reviews, want 2", allowedTTL, *asked)
	}

	r, clk, asked = reviewer(t, grants{})
	_ = r.Check(ctx, app, read)
	_ = r.Check(ctx, app, read)
	if *asked != 3 {
		t.Fatalf("a refusal is kept: asked %d reviews, want 3", *asked)
	}
	clk.SetTime(clk.Now().Add(deniedTTL))
	_ = r.Check(ctx, app, read)
	if *asked != 6 {
		t.Fatalf("a refusal expires after %v, sooner than an allowance: asked %d reviews, want 6", deniedTTL, *asked)
	}
}

func TestForbiddenErrorSaysWhatAndHow(t *testing.T) {
	err := (&ForbiddenError{ServiceAccount: app, Read: Read{Verb: "get", Resource: configMaps, Namespace: "team-a", Name: "source"}}).Error()
	want := `the policy's ServiceAccount "metacel-system/app" may not get configmaps "source" in namespace "team-a": grant it that in a Role or ClusterRole (metacel rbac prints what the policy needs)`
	if err != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}
