package policy

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// APIVersion and Kind identify a policy document.
const (
	APIVersion = "metacel.dev/v1alpha1"
	Kind       = "CompositePolicy"
)

// CompositePolicy is one operator written as YAML: a parent resource, the children it may own and
// the CEL that computes them.
type CompositePolicy struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       Spec       `json:"spec"`
}

// ObjectMeta is the part of Kubernetes object metadata a policy uses.
type ObjectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Spec is the body of a policy.
type Spec struct {
	ParentResource ParentResource `json:"parentResource"`
	// ParentSchema declares the parent's custom resource in short, when the policy defines it:
	// `metacel crd` prints its CustomResourceDefinition, and expressions are typed against it
	// while no CRD of the parent is given (--crd) or installed.
	ParentSchema        *ParentSchema   `json:"parentSchema,omitempty"`
	ChildResources      []ChildResource `json:"childResources,omitempty"`
	ResyncPeriodSeconds *int64          `json:"resyncPeriodSeconds,omitempty"`
	Validations         []Validation    `json:"validations,omitempty"`
	Variables           []Variable      `json:"variables,omitempty"`
	Related             []Related       `json:"related,omitempty"`
	Children            []Child         `json:"children,omitempty"`
	// Status holds the fields merged into the parent's status: a YAML tree of ${} templates.
	Status map[string]any `json:"status,omitempty"`
	// ReadyWhen is CEL over parent, related, variables and children returning a bool: the
	// parent is Ready only while it is true, and every included child is ready. Without it, a
	// parent with no child included is not Ready.
	ReadyWhen string `json:"readyWhen,omitempty"`
	// Conditions are the parent's own conditions, written beside Synced and Ready.
	Conditions []Condition `json:"conditions,omitempty"`
	// Confinement bounds how far the author of a namespaced parent reaches through it: the
	// namespaces other than the parent's own that its related objects may be read from and its
	// children written to. Without it, a parent reaches its own namespace only.
	Confinement *Confinement `json:"confinement,omitempty"`
	// Rollout says how a new version of the policy reaches its parents: step by step, each
	// step's parents healthy before the next. Without it, a new version reaches every parent at once.
	Rollout *Rollout `json:"rollout,omitempty"`
	// ServiceAccountName is the ServiceAccount, in the runtime's policy namespace, the policy acts
	// as: every write it makes (children, the parent's status and finalizer) impersonates it, and
	// every object it reads (related objects, children) must be one it may read. Without it, the
	// policy acts as the runtime itself, which a runtime allows only when told to
	// (--allow-policies-without-service-account: cluster-admin-equivalent for whoever may write a
	// policy).
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// Condition is one of the parent's own conditions: a type, and ${} templates of its status
// (True, False or Unknown), reason (one CamelCase word) and message.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// Rollout moves parents to a new version of the policy in steps, a growing share of them at a
// time, and back to the previous version when more of them than the failure budget stay unhealthy.
type Rollout struct {
	// Steps are the shares of parents on the new version, strictly increasing, the last 100.
	Steps []RolloutStep `json:"steps"`
	// Health is CEL over parent returning a bool; empty: the parent's Ready condition is True
	// (and its Synced condition is not False).
	Health string `json:"health,omitempty"`
	// HealthDeadlineSeconds is how long a step's parents have to become healthy (default 300).
	HealthDeadlineSeconds *int64 `json:"healthDeadlineSeconds,omitempty"`
	// FailureBudget is how many moved parents may stay unhealthy at the deadline: a count, or a
	// percentage string ("10%") of the parents moved so far, rounded down (default 0).
	FailureBudget *intstr.IntOrString `json:"failureBudget,omitempty"`
}

// RolloutStep is one step of a rollout.
type RolloutStep struct {
	// Percent is the share of parents on the new version after this step, 1 to 100.
	Percent int `json:"percent"`
	// PauseSeconds is how long to wait once the step's parents are healthy (default 0).
	PauseSeconds int64 `json:"pauseSeconds,omitempty"`
}

// Confinement says which namespaces, beyond the parent's own, a namespaced parent may reach.
type Confinement struct {
	// RelatedNamespaces are the namespaces related objects may be read from.
	RelatedNamespaces *NamespaceRule `json:"relatedNamespaces,omitempty"`
	// ChildNamespaces are the namespaces crossNamespace children may be written to.
	ChildNamespaces *NamespaceRule `json:"childNamespaces,omitempty"`
}

// NamespaceRule allows namespaces by name (names, expression) and, with consentLabel, only those
// of them that consent: a namespace is allowed when it is named (or nothing names any) and, if
// consentLabel is set, carries that label with the value "true".
type NamespaceRule struct {
	// Names lists allowed namespaces; "*" allows every namespace.
	Names []string `json:"names,omitempty"`
	// Expression is CEL over parent returning a list of allowed namespace names, checked per sync.
	Expression string `json:"expression,omitempty"`
	// ConsentLabel is a label the namespace must carry with the value "true" (its owners opt in).
	ConsentLabel string `json:"consentLabel,omitempty"`
}

// ParentResource names the resource whose objects are parents.
type ParentResource struct {
	APIVersion    string                `json:"apiVersion"`
	Resource      string                `json:"resource"`
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// ParentSchema is the short form of a parent's CustomResourceDefinition: its group, version and
// plural come from ParentResource, its names, scope and the fields of its spec and status from
// here (see ParentCRD for what the CRD adds).
type ParentSchema struct {
	// Kind of the parent's objects, e.g. Website.
	Kind string `json:"kind"`
	// Scope is Namespaced (the default) or Cluster.
	Scope apiextensionsv1.ResourceScope `json:"scope,omitempty"`
	// Singular defaults to the lowercase kind, ListKind to the kind followed by List.
	Singular   string   `json:"singular,omitempty"`
	ListKind   string   `json:"listKind,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
	// Description says what a parent is, for kubectl explain.
	Description string `json:"description,omitempty"`
	// Spec and Status declare the fields of the parent's spec and status.
	Spec   Fields `json:"spec,omitempty"`
	Status Fields `json:"status,omitempty"`
	// Rules are CEL rules on the whole parent (self; oldSelf, the parent before an update, makes
	// a transition rule), which the API server checks when a parent is written: its CRD's
	// x-kubernetes-validations. A field has rules of its own under the same key.
	Rules []ValidationRule `json:"x-kubernetes-validations,omitempty"`
	// PrinterColumns are the columns kubectl get shows, before Synced, Ready and Age.
	PrinterColumns []PrinterColumn `json:"printerColumns,omitempty"`
	// Install has the runtime install the CRD and keep it what parentSchema declares: created when
	// the policy loads, updated by server-side apply when parentSchema changes, unless a stored
	// parent would not survive the change (annotate the policy
	// metacel.dev/allow-breaking-schema-change: "true" to go ahead). A CRD the runtime did not
	// install is never modified, and none is ever deleted.
	Install bool `json:"install,omitempty"`
	// Versions are the parent's other versions, beside the one spec.parentResource names (the
	// policy's version, which Spec and Status above declare): each with its own fields and how
	// its objects convert to the policy's version and back, in CEL. The runtime serves the
	// conversion as the CRD's conversion webhook.
	Versions []ParentVersion `json:"versions,omitempty"`
	// StorageVersion is the version the API server stores parents at: the policy's version
	// (the default) or one of Versions. When it changes, the runtime rewrites the stored parents
	// at the new one and trims the CRD's status.storedVersions.
	StorageVersion string `json:"storageVersion,omitempty"`
}

// ParentVersion is a version of the parent's API other than the policy's version: its fields,
// whether the API server serves it, and how its objects convert to the policy's version (toHub)
// and back (fromHub).
type ParentVersion struct {
	// Name of the version, e.g. v1alpha1.
	Name string `json:"name"`
	// Served says whether the API server serves the version (default true).
	Served *bool `json:"served,omitempty"`
	// Deprecated has the API server warn each client that reads or writes the version, with
	// DeprecationWarning if given.
	Deprecated         bool   `json:"deprecated,omitempty"`
	DeprecationWarning string `json:"deprecationWarning,omitempty"`
	// Spec and Status declare the version's fields, as parentSchema's do.
	Spec   Fields `json:"spec,omitempty"`
	Status Fields `json:"status,omitempty"`
	// Rules and PrinterColumns of the version, as parentSchema's.
	Rules          []ValidationRule `json:"x-kubernetes-validations,omitempty"`
	PrinterColumns []PrinterColumn  `json:"printerColumns,omitempty"`
	// ToHub converts an object at this version to the policy's version; FromHub converts one at
	// the policy's version to this version.
	ToHub   Conversion `json:"toHub,omitempty"`
	FromHub Conversion `json:"fromHub,omitempty"`
}

// IsServed reports whether the API server serves the version.
func (v ParentVersion) IsServed() bool { return v.Served == nil || *v.Served }

// Conversion is how an object's spec and status become those of another version: templates of
// the other version's spec and status, whose ${} expressions read parent, the object as it is.
// A part left out is copied as it is, which needs the same fields in both versions. Every field of
// the object the templates do not read must be listed in Keep: the runtime keeps those values in an
// annotation of the converted object, and puts them back when it converts it back, so that a round
// trip loses nothing (Kubernetes' convention for conversions).
type Conversion struct {
	Spec   any      `json:"spec,omitempty"`
	Status any      `json:"status,omitempty"`
	Keep   []string `json:"keep,omitempty"`
}

// ValidationRule is a CEL rule the API server checks when a parent is written: Rule is true when
// the value (self) is valid, Message says what is wrong when it is not.
type ValidationRule struct {
	Rule    string `json:"rule"`
	Message string `json:"message,omitempty"`
}

// PrinterColumn is a column kubectl get shows: the value at JSONPath (e.g. .spec.replicas) under
// the header Name. Type (integer, number, string, boolean or date) defaults to the type of the
// declared field JSONPath names; Priority 0 shows the column always, more only with -o wide.
type PrinterColumn struct {
	Name        string `json:"name"`
	Type        string `json:"type,omitempty"`
	JSONPath    string `json:"jsonPath"`
	Description string `json:"description,omitempty"`
	Priority    int32  `json:"priority,omitempty"`
}

// Fields declares the fields of an object by name. Each value is a type name (string, integer,
// number, boolean, object, array) or a field: an object of type, description, required, default,
// enum, minimum, maximum, minLength, maxLength, pattern, format, minItems, maxItems, items (a
// field), properties (Fields), additionalProperties (a field), maxProperties, immutable and
// x-kubernetes-validations (ValidationRules).
type Fields map[string]any

// ChildResource allows one resource as a child and says how its objects are updated.
type ChildResource struct {
	APIVersion     string          `json:"apiVersion"`
	Resource       string          `json:"resource"`
	UpdateStrategy *UpdateStrategy `json:"updateStrategy,omitempty"`
}

// UpdateMethod says how a child that differs from its desired state is brought in line.
type UpdateMethod string

// The update methods.
const (
	// InPlace applies the desired state with server-side apply (the default).
	InPlace UpdateMethod = "InPlace"
	// Recreate deletes the child and creates it anew, for kinds whose spec is immutable.
	Recreate UpdateMethod = "Recreate"
	// OnDelete creates a missing child and never updates an existing one.
	OnDelete UpdateMethod = "OnDelete"
)

// UpdateStrategy of a child resource.
type UpdateStrategy struct {
	Method UpdateMethod `json:"method,omitempty"`
}

// Validation is checked before anything else; when it is false the parent reports the message
// and no child is touched.
type Validation struct {
	Expression        string `json:"expression"`
	Message           string `json:"message,omitempty"`
	MessageExpression string `json:"messageExpression,omitempty"`
}

// Variable is a named CEL value, usable as variables.<name> by later variables, children and status.
type Variable struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// Related names another object (or, with a selector, a list of objects) to read and watch.
type Related struct {
	ID         string `json:"id"`
	APIVersion string `json:"apiVersion"`
	Resource   string `json:"resource"`
	// Namespace and Name are ${} templates evaluated against the parent.
	Namespace string                `json:"namespace,omitempty"`
	Name      string                `json:"name,omitempty"`
	Selector  *metav1.LabelSelector `json:"selector,omitempty"`
}

// DeletionPolicy says what happens to a child that is no longer desired.
type DeletionPolicy string

// The deletion policies.
const (
	DeletionDelete DeletionPolicy = "Delete"
	DeletionOrphan DeletionPolicy = "Orphan"
)

// Child computes one child object, or one per item of ForEach.
type Child struct {
	ID          string `json:"id"`
	IncludeWhen string `json:"includeWhen,omitempty"`
	ForEach     string `json:"forEach,omitempty"`
	// Template is a YAML object whose strings may hold ${} templates.
	Template map[string]any `json:"template,omitempty"`
	// Expression is CEL returning one object or a list of objects; the alternative to Template.
	Expression     string         `json:"expression,omitempty"`
	ReadyWhen      string         `json:"readyWhen,omitempty"`
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
	CrossNamespace bool           `json:"crossNamespace,omitempty"`
	// DependsOn names children this one is applied after, once they are ready, and deleted
	// before: what its expressions do not show (a Deployment that mounts a Secret by a literal
	// name). What they do show (children.<id>) orders the children without it.
	DependsOn []string `json:"dependsOn,omitempty"`
}

// Method returns the update method of a child resource, InPlace when none is set.
func (c ChildResource) Method() UpdateMethod {
	if c.UpdateStrategy == nil || c.UpdateStrategy.Method == "" {
		return InPlace
	}
	return c.UpdateStrategy.Method
}
