package dataexec

import (
	"errors"

	"github.com/askbi/askbi"
)

// FailureKind says why a data request failed, in the terms a person can
// act on; each kind has one repair action. It refines the askbi code (a
// kind never contradicts it): a client shows the repair, the code keeps
// its status.
type FailureKind string

// Failure kinds.
const (
	FailInvalidRequest  FailureKind = "invalid_request"  // the request (SQL, tool arguments) is wrong
	FailInvalidResult   FailureKind = "invalid_result"   // the source answered, but not with chart-ready data
	FailMissingFields   FailureKind = "missing_fields"   // an output field path selects nothing
	FailUnavailableTool FailureKind = "unavailable_tool" // the tool is gone, no longer approved, or the connection inactive
	FailSignIn          FailureKind = "sign_in"          // the remote server refused the connection's credentials
	FailAccess          FailureKind = "access"           // the remote server refused this request
	FailTimeout         FailureKind = "timeout"          // no answer in time
)

// Repair is the one action that fixes a failure.
type Repair string

// Repairs.
const (
	RepairFixDataset     Repair = "fix_dataset"
	RepairOpenConnection Repair = "open_connection"
	RepairTryAgain       Repair = "try_again"
)

// Repair returns the action that fixes failures of kind k.
func (k FailureKind) Repair() Repair {
	switch k {
	case FailUnavailableTool, FailSignIn, FailAccess:
		return RepairOpenConnection
	case FailTimeout:
		return RepairTryAgain
	}
	return RepairFixDataset
}

// Failure marks an error with its kind. Sources wrap their errors in it
// (inside an [askbi.Error], whose code stays what callers match on).
type Failure struct {
	Kind FailureKind
	Err  error
}

func (f *Failure) Error() string {
	if f.Err == nil {
		return string(f.Kind)
	}
	return f.Err.Error()
}
func (f *Failure) Unwrap() error { return f.Err }

// Fail returns an askbi error of code with a safe message, marked with
// kind; cause, when not nil, is the detail kept for logs (a remote
// party's error text is never the message).
func Fail(kind FailureKind, code askbi.Code, cause error, format string, args ...any) error {
	e := askbi.Errorf(code, format, args...)
	if cause == nil {
		cause = e
	}
	return &askbi.Error{Code: code, Message: askbi.ErrorMessage(e), Err: &Failure{Kind: kind, Err: cause}}
}

// FailureOf returns the kind of a data request's failure: the one a
// source marked, or else the one its code implies (InvalidArgument is an
// invalid request, InvalidResult an invalid result or, when it names a
// field path, missing fields; Timeout a timeout). ok is false for errors
// no repair can help with (Internal, access to the product itself).
func FailureOf(err error) (kind FailureKind, ok bool) {
	var f *Failure
	if errors.As(err, &f) {
		return f.Kind, true
	}
	switch askbi.ErrorCode(err) {
	case askbi.InvalidArgument:
		return FailInvalidRequest, true
	case askbi.InvalidResult:
		if errors.Is(err, errMissingField) {
			return FailMissingFields, true
		}
		return FailInvalidResult, true
	case askbi.Timeout:
		return FailTimeout, true
	}
	return "", false
}

// errMissingField marks mapping errors about a path that selects nothing.
var errMissingField = errors.New("missing field")
