{{/* The name of every object of a release. */}}
{{- define "toolgate.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the pods. */}}
{{- define "toolgate.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "toolgate.labels" -}}
{{ include "toolgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The ledger DSN of the chart's Secret: required, and not the example's. */}}
{{- define "toolgate.dsn" -}}
{{- $dsn := required "ledger.dsn is required: set it to your PostgreSQL DSN (postgres://USER:PASSWORD@HOST:5432/DB?sslmode=require), or name your own Secret with ledger.existingSecret" .Values.ledger.dsn -}}
{{- if contains "CHANGE-ME" $dsn -}}
{{- fail "ledger.dsn still holds the example password CHANGE-ME: set the real DSN, or name your own Secret with ledger.existingSecret" -}}
{{- end -}}
{{- $dsn -}}
{{- end -}}

{{/* Where the settings file with the DSN is: the chart's Secret, or the existing one. */}}
{{- define "toolgate.configPath" -}}
{{- if .Values.ledger.existingSecret -}}/etc/toolgate/ledger/ledger.yaml{{- else -}}/etc/toolgate/secret/ledger.yaml{{- end -}}
{{- end -}}

{{/* Where tokens.yaml is: the chart's Secret, unless an existing Secret holds it (no tokens in the values). */}}
{{- define "toolgate.tokensPath" -}}
{{- if or (not .Values.ledger.existingSecret) .Values.tokens -}}/etc/toolgate/secret/tokens.yaml{{- else -}}/etc/toolgate/ledger/tokens.yaml{{- end -}}
{{- end -}}

{{- define "toolgate.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if hasPrefix "sha256:" $tag -}}
{{ .Values.image.repository }}@{{ $tag }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}
