{{- define "metacel.labels" -}}
app.kubernetes.io/name: metacel
app.kubernetes.io/part-of: metacel
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}
