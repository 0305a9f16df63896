package kube

import (
	"fmt"
	"strings"
)

// Finding is one thing the bridge could not carry over as written: a
// field podsup cannot honour (a warning: the field is dropped) or one it
// refuses (an error: converting would change what the workload does).
type Finding struct {
	// Object names the manifest's object, "Deployment/web".
	Object string
	// Path is the field's YAML path in that object,
	// "spec.containers[1].volumeMounts".
	Path  string
	Msg   string
	Error bool
	// Note is what the user should know but which changes nothing the
	// workload does (a document of a kind podsup does not run, skipped):
	// Strict leaves it a note.
	Note bool
}

func (f Finding) String() string {
	kind := "warning"
	switch {
	case f.Error:
		kind = "error"
	case f.Note:
		kind = "note"
	}
	where := f.Path
	if f.Object != "" {
		where = f.Object + ": " + f.Path
	}
	return fmt.Sprintf("%s: %s: %s", kind, where, f.Msg)
}

// FindingsError is a conversion refused: every finding, the errors that
// refuse it (under Strict, every warning is one) and the warnings that
// would come with it, each with its path.
type FindingsError struct {
	Findings []Finding
}

func (e *FindingsError) Error() string {
	lines := make([]string, len(e.Findings))
	for i, f := range e.Findings {
		lines[i] = f.String()
	}
	return "converting the manifest:\n  " + strings.Join(lines, "\n  ")
}

// reporter collects findings for one object.
type reporter struct {
	object   string
	findings []Finding
}

func (r *reporter) warn(path, format string, args ...any) {
	r.findings = append(r.findings, Finding{Object: r.object, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (r *reporter) note(path, format string, args ...any) {
	r.findings = append(r.findings, Finding{Object: r.object, Path: path, Msg: fmt.Sprintf(format, args...), Note: true})
}

func (r *reporter) fail(path, format string, args ...any) {
	r.findings = append(r.findings, Finding{Object: r.object, Path: path, Msg: fmt.Sprintf(format, args...), Error: true})
}
