{{- define "metacel.labels" -}}
app.kubernetes.io/name: metacel
app.kubernetes.io/part-of: metacel
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- /* metacel is installed once per cluster: its cluster-wide objects (the ClusterRoles metacel
and metacel-base, the ClusterRoleBinding metacel, the ValidatingAdmissionPolicy and its binding
metacel-policy-authors) have fixed names, and the runtime's ClusterRole aggregates every
policy's. A second release (another name or namespace) fails here, before helm finds the names
taken. lookup reads nothing under `helm template`, so this checks only against a cluster. */ -}}
{{- define "metacel.onePerCluster" -}}
{{- with lookup "rbac.authorization.k8s.io/v1" "ClusterRole" "" "metacel" }}
{{- $annotations := .metadata.annotations | default dict }}
{{- $name := get $annotations "meta.helm.sh/release-name" }}
{{- $namespace := get $annotations "meta.helm.sh/release-namespace" }}
{{- if or (ne $name $.Release.Name) (ne $namespace $.Release.Namespace) }}
{{- $owner := "an installation not made by Helm (kubectl apply -k deploy/?)" }}
{{- if $name }}{{ $owner = printf "the release %s in the namespace %s" $name $namespace }}{{ end }}
{{- fail (printf "metacel is installed once per cluster (its ClusterRoles metacel and metacel-base, ClusterRoleBinding metacel and ValidatingAdmissionPolicy metacel-policy-authors have fixed names), and %s already holds it: upgrade that one, or uninstall it first" $owner) }}
{{- end }}
{{- end }}
{{- end -}}
