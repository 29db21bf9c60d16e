package workspace

// FilterOp compares a field with a filter value.
type FilterOp string

// Filter operators. Ordering operators compare numbers numerically and
// strings (such as ISO dates) lexically; contains is a case-insensitive
// substring match; in matches any of a list.
const (
	OpEq       FilterOp = "eq"
	OpNe       FilterOp = "ne"
	OpGt       FilterOp = "gt"
	OpGte      FilterOp = "gte"
	OpLt       FilterOp = "lt"
	OpLte      FilterOp = "lte"
	OpContains FilterOp = "contains"
	OpIn       FilterOp = "in"
)

// Filter keeps the rows whose Field compares to Value by Op. Filters apply
// to the mapped rows a source returned (within the row cap), all of them
// at once (AND).
//
// Value is a JSON scalar: eq and ne take a number, string, boolean or null
// (null matches empty cells); gt, gte, lt and lte a number or string;
// contains a non-empty string; in an array of 1 to 100 scalars. A number
// and a numeric string compare as numbers; two strings compare as strings.
type Filter struct {
	Field string   `json:"field"`
	Op    FilterOp `json:"op"`
	Value any      `json:"value"`
}
