package workspace

// Scope is what part of its source's data a dataset holds, declared by
// the host: conditions its request applies where the Executor cannot see
// them (a WHERE clause in its SQL, a tool argument), such as
// {"page_path", "eq", "/pricing"} or {"region", "in", ["EU"]}. A dataset's
// saved filters (Request.Filters) limit it too; DatasetScope joins both.
type Scope struct {
	// Filters are the conditions every row of the dataset meets. A field
	// need not be one of the dataset's output fields: a run's filter that
	// repeats one of them is satisfied as it is, so a caller can name the
	// scope in its filters.
	Filters []Filter `json:"filters,omitempty"`
	// UnscopedID is a dataset with the same data without this scope, when
	// the host knows one: Ask offers it for a broader request.
	UnscopedID string `json:"unscoped_dataset_id,omitempty"`
}
