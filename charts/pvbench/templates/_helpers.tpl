{{/* Labels every object of the release carries. */}}
{{- define "pvbench.labels" -}}
app.kubernetes.io/name: pvbench
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/*
Set argument parameters of a rendered Argo object (files/*.yaml, rendered from workflows/*.py).
Usage: include "pvbench.setParameters" (dict "params" $list "values" $map "known" $names "where" "benchmark.parameters")
Existing parameters get the new value; names not yet in the list are appended when "append" is
true; a name that the WorkflowTemplate does not take is an error at install time, and so is a
value outside the parameter's enum when "enum" is true (the template's own defaults: the Argo
Server refuses to submit a template whose default is not among its choices).
Returns the list as JSON (Helm templates can only return strings).
*/}}
{{- define "pvbench.setParameters" -}}
{{- $params := .params -}}
{{- range $name, $value := .values -}}
{{- if not (has $name $.known) -}}
{{- fail (printf "%s: %q is not a parameter of pvbench-benchmark (it takes: %s)" $.where $name (join ", " $.known)) -}}
{{- end -}}
{{- $found := false -}}
{{- range $p := $params -}}
{{- if eq $p.name $name -}}
{{- if and $.enum $p.enum (not (has (toString $value) $p.enum)) -}}
{{- fail (printf "%s: %s=%q is not one of %s (the Argo UI offers only these; other values can be given per run)" $.where $name (toString $value) (join ", " $p.enum)) -}}
{{- end -}}
{{- $_ := set $p "value" (toString $value) -}}{{- $found = true -}}
{{- end -}}
{{- end -}}
{{- if and (not $found) $.append -}}
{{- $params = append $params (dict "name" $name "value" (toString $value)) -}}
{{- end -}}
{{- end -}}
{{- toJson $params -}}
{{- end }}

{{/* The benchmark WorkflowTemplate as rendered by Hera (a dict). */}}
{{- define "pvbench.benchmarkDoc" -}}
{{- .Files.Get "files/benchmark.yaml" -}}
{{- end }}

{{/* Names of the benchmark parameters (JSON list). */}}
{{- define "pvbench.parameterNames" -}}
{{- $doc := include "pvbench.benchmarkDoc" . | fromYaml -}}
{{- $names := list -}}
{{- range $p := $doc.spec.arguments.parameters -}}{{- $names = append $names $p.name -}}{{- end -}}
{{- toJson $names -}}
{{- end }}

{{/* The arguments a triggered run gets: role, trigger, what changed, plus events.parameters. */}}
{{- define "pvbench.image" -}}
{{- printf "%s:%s" .repository .tag -}}
{{- end }}

{{/* A storage-classes parameter (a JSON list, or comma-separated as pvbench also takes it) as a JSON list. */}}
{{- define "pvbench.classList" -}}
{{- $text := toString . | trim -}}
{{- if hasPrefix "[" $text -}}
{{- $text -}}
{{- else -}}
{{- $items := list -}}
{{- range splitList "," $text -}}{{- if trim . -}}{{- $items = append $items (trim .) -}}{{- end -}}{{- end -}}
{{- toJson $items -}}
{{- end -}}
{{- end }}
