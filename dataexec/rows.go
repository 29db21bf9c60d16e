package dataexec

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// resultRows are a Result's rows: as cells, as JSON, or both. A result
// the executor fetched has both (the JSON is what the cache keeps); a
// result served from the cache has the JSON only, and Rows decodes it
// the first time it is called. Either form is shared: nobody may change
// it.
type resultRows struct {
	cells   [][]any   // as built; nil when the rows came from the cache
	json    *rowsJSON // nil when the rows were not encoded
	once    sync.Once
	decoded [][]any // json's cells, once Rows decoded them
}

// NewResult returns a result of the given columns and rows with meta,
// its RowCount set to len(rows).
func NewResult(columns []string, rows [][]any, meta Meta) *Result {
	if rows == nil {
		rows = [][]any{}
	}
	meta.RowCount = len(rows)
	return &Result{Columns: columns, Meta: meta, rows: &resultRows{cells: rows}}
}

// Rows returns the result's cells, row by row: nil, bool, int64, float64,
// json.Number or string (see the output field rules on Request.Fields);
// objects and arrays too in an exploration preview without fields. A
// result served from the cache holds its rows as JSON only: the first
// call decodes them, to the same cells, and later calls return those.
// Read them, never change them: they may be shared.
func (r *Result) Rows() [][]any {
	rr := r.rows
	switch {
	case rr == nil || rr.cells == nil && rr.json == nil:
		return [][]any{}
	case rr.cells != nil:
		return rr.cells
	}
	rr.once.Do(func() {
		cells, err := rr.json.decode()
		if err != nil {
			// The bytes are the encoder's own: this is a bug.
			panic(fmt.Sprintf("dataexec: the cached rows do not decode: %v", err))
		}
		rr.decoded = cells
	})
	return rr.decoded
}

// AppendRowsJSON appends the result's rows to dst as a JSON array of
// arrays: what AppendRowsJSON(dst, r.Rows()) appends, copied from the
// encoding when the result has one (a result from the cache, or one the
// executor fetched for a dataset), so that its rows are not encoded
// again.
func (r *Result) AppendRowsJSON(dst []byte) ([]byte, error) {
	if r.rows != nil && r.rows.json != nil {
		return r.rows.json.appendTo(dst), nil
	}
	return AppendRowsJSON(dst, r.Rows())
}

// Head returns a copy of r with its first n rows (all of them when it
// has fewer), RowCount set to their number and the rest of Meta as it
// is. It copies no row.
func (r *Result) Head(n int) *Result {
	c := *r
	rr := &resultRows{}
	if r.rows != nil {
		if r.rows.json != nil {
			rr.json = r.rows.json.head(n)
			c.RowCount = rr.json.n
		}
		if cells := r.rows.cells; cells != nil {
			rr.cells = cells[:min(max(n, 0), len(cells))]
			c.RowCount = len(rr.cells)
		}
	} else {
		c.RowCount = 0
	}
	c.rows = rr
	return &c
}

// MarshalJSON writes the result as its fields' tags say: dataset,
// columns, rows and the members of Meta.
func (r Result) MarshalJSON() ([]byte, error) {
	rows, err := r.AppendRowsJSON(nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Dataset *Ref            `json:"dataset,omitempty"`
		Columns []string        `json:"columns"`
		Rows    json.RawMessage `json:"rows"`
		Meta
	}{r.Dataset, r.Columns, rows, r.Meta})
}

// rowsJSON is a result's rows in one byte slice, the form the cache
// keeps: the rows as AppendRowsJSON writes them ([[...],[...]]), then the
// end offset of each row's JSON (4 bytes, little-endian), then one byte
// per number cell, in order, naming its Go type (the JSON of 2, 2.0 and
// "2" as a json.Number is the same). That is what it takes to cut the
// rows without decoding them, and to decode them back exactly.
type rowsJSON struct {
	buf   []byte
	size  int // the JSON's length in buf
	total int // the rows in buf
	n     int // the rows this view holds: the first n (head)
}

// The kinds of number cells.
const (
	kindInt64  = 'i'
	kindFloat  = 'f'
	kindNumber = 'n'
)

// errNotScalar: a cell the cache does not keep (an object or array of a
// preview, or a type outside the Result cells).
var errNotScalar = errors.New("dataexec: a cell that is not a scalar")

// encodeRows encodes rows for the cache; sizeHint is the JSON's
// estimated size. The buffer it returns is allocated at its final size,
// so that its capacity is the memory it holds. It fails for a cell that
// is not one of a dataset's scalars, and for what AppendRowsJSON refuses.
func encodeRows(rows [][]any, sizeHint int64) (*rowsJSON, error) {
	b := make([]byte, 0, sizeHint+16)
	var kinds []byte
	ends := make([]uint32, len(rows))
	b = append(b, '[')
	for i, row := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j, cell := range row {
			if j > 0 {
				b = append(b, ',')
			}
			switch cell.(type) {
			case nil, bool, string:
			case int64:
				kinds = append(kinds, kindInt64)
			case float64:
				kinds = append(kinds, kindFloat)
			case json.Number:
				kinds = append(kinds, kindNumber)
			default:
				return nil, errNotScalar
			}
			var err error
			if b, err = appendCellJSON(b, cell); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
		if len(b) > 1<<31 {
			return nil, errors.New("dataexec: rows too large to cache")
		}
		ends[i] = uint32(len(b))
	}
	b = append(b, ']')
	j := &rowsJSON{size: len(b), total: len(rows), n: len(rows)}
	// One allocation of the final size. Growing a nil slice rounds the
	// capacity up to the size the allocator gives (its size class, or
	// whole pages), so cap is the memory it holds.
	j.buf = append([]byte(nil), make([]byte, len(b)+4*len(ends)+len(kinds))...)[:0]
	j.buf = append(j.buf, b...)
	for _, e := range ends {
		j.buf = binary.LittleEndian.AppendUint32(j.buf, e)
	}
	j.buf = append(j.buf, kinds...)
	return j, nil
}

// bytes is the memory j holds.
func (j *rowsJSON) bytes() int64 { return int64(cap(j.buf)) }

// end is the offset just past row i's JSON.
func (j *rowsJSON) end(i int) int {
	return int(binary.LittleEndian.Uint32(j.buf[j.size+4*i:]))
}

// head is a view of the first n rows.
func (j *rowsJSON) head(n int) *rowsJSON {
	h := *j
	h.n = min(max(n, 0), j.n)
	return &h
}

// appendTo appends the JSON of the view's rows.
func (j *rowsJSON) appendTo(dst []byte) []byte {
	if j.n == j.total {
		return append(dst, j.buf[:j.size]...)
	}
	if j.n == 0 {
		return append(dst, "[]"...)
	}
	return append(append(dst, j.buf[:j.end(j.n-1)]...), ']')
}

// decode returns the view's rows as the cells they were encoded from.
// Strings come out as JSON holds them: an invalid UTF-8 byte, which
// encoding/json writes as \ufffd, stays U+FFFD.
func (j *rowsJSON) decode() ([][]any, error) {
	rows := make([][]any, j.n)
	if j.n == 0 {
		return rows, nil
	}
	d := rowDecoder{s: string(j.buf[1:j.end(j.n-1)]), kinds: j.buf[j.size+4*j.total:]}
	var cells []any // the rows after the first are cut from it, sized by the first
	for i := range rows {
		if i > 0 && !d.skip(',') {
			return nil, d.fail("a comma between rows")
		}
		if !d.skip('[') {
			return nil, d.fail("a row")
		}
		if i == 1 {
			cells = make([]any, 0, len(rows[0])*(j.n-1))
		}
		start := len(cells)
		for !d.skip(']') {
			if len(cells) > start && !d.skip(',') {
				return nil, d.fail("a comma between cells")
			}
			cell, err := d.cell()
			if err != nil {
				return nil, err
			}
			cells = append(cells, cell)
		}
		rows[i] = cells[start:len(cells):len(cells)]
		if i == 0 {
			cells = nil
		}
	}
	if d.i != len(d.s) {
		return nil, d.fail("the end of the rows")
	}
	return rows, nil
}

// rowDecoder reads the cells of the JSON rowsJSON writes.
type rowDecoder struct {
	s     string
	i     int
	kinds []byte
}

func (d *rowDecoder) skip(c byte) bool {
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *rowDecoder) fail(want string) error {
	return fmt.Errorf("offset %d: want %s", d.i, want)
}

func (d *rowDecoder) cell() (any, error) {
	if d.i >= len(d.s) {
		return nil, d.fail("a cell")
	}
	rest := d.s[d.i:]
	switch rest[0] {
	case 'n':
		d.i += len("null")
		return nil, nil
	case 't':
		d.i += len("true")
		return true, nil
	case 'f':
		d.i += len("false")
		return false, nil
	case '"':
		end, escaped := 1, false
		for end < len(rest) && rest[end] != '"' {
			if rest[end] == '\\' {
				escaped = true
				end++
			}
			end++
		}
		if end >= len(rest) {
			return nil, d.fail("the end of a string")
		}
		d.i += end + 1
		if !escaped {
			return rest[1:end], nil
		}
		var s string
		if err := json.Unmarshal([]byte(rest[:end+1]), &s); err != nil {
			return nil, err
		}
		return s, nil
	}
	end := strings.IndexAny(rest, ",]")
	if end < 0 {
		end = len(rest)
	}
	lit := rest[:end]
	d.i += end
	if len(d.kinds) == 0 {
		return nil, d.fail("a number's kind")
	}
	kind := d.kinds[0]
	d.kinds = d.kinds[1:]
	switch kind {
	case kindInt64:
		return strconv.ParseInt(lit, 10, 64)
	case kindFloat:
		return strconv.ParseFloat(lit, 64)
	case kindNumber:
		return json.Number(lit), nil
	}
	return nil, d.fail("a known kind")
}

// rowsSize is the size of r's rows as JSON where they were encoded (a
// cached result's always are), 0 otherwise: what telemetry reports as a
// result's bytes.
func (r *Result) rowsSize() int64 {
	if r == nil || r.rows == nil || r.rows.json == nil {
		return 0
	}
	return int64(r.rows.json.size)
}
