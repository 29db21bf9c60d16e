package mysqlsource

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/askbi/askbi/internal/sqlcell"
)

// normalize turns a value scanned from go-sql-driver/mysql's binary
// protocol into a JSON-friendly cell (see dataexec.Table) and estimates
// its size as JSON. typ is the column's type name as the driver reports
// it ("DECIMAL", "JSON", "VARBINARY", "UNSIGNED BIGINT", ...).
//
// A value that stays as it is returns cell, the interface it came in, so
// that it is not boxed again.
func normalize(cell any, typ string) (any, int64, error) {
	switch v := cell.(type) {
	case nil:
		return nil, 4, nil
	case int64:
		var buf [20]byte
		return cell, int64(len(strconv.AppendInt(buf[:0], v, 10))), nil
	case float64:
		var buf [32]byte
		return cell, int64(len(strconv.AppendFloat(buf[:0], v, 'g', -1, 64))), nil
	case float32:
		// As its shortest float32 text reads: 0.1, not 0.10000000149011612.
		s := strconv.FormatFloat(float64(v), 'g', -1, 32)
		f, _ := strconv.ParseFloat(s, 64)
		return f, int64(len(s)), nil
	case time.Time:
		return cell, 37, nil // quoted RFC 3339 with nanoseconds and offset
	case []byte:
		switch {
		case typ == "DECIMAL", typ == "UNSIGNED BIGINT":
			return json.Number(v), int64(len(v)), nil
		case typ == "JSON":
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.UseNumber()
			var x any
			if err := dec.Decode(&x); err != nil {
				return nil, 0, fmt.Errorf("mysqlsource: decode %s cell: %w", typ, err)
			}
			return x, int64(len(v)), nil
		case typ == "BIT" && len(v) <= 8:
			var b [8]byte
			copy(b[8-len(v):], v)
			n := binary.BigEndian.Uint64(b[:])
			if n > math.MaxInt64 {
				s := strconv.FormatUint(n, 10)
				return json.Number(s), int64(len(s)), nil
			}
			return normalize(int64(n), "")
		case binaryTypes[typ], strings.HasSuffix(typ, "BLOB"):
			s := base64.StdEncoding.EncodeToString(v)
			return s, int64(len(s)) + 2, nil
		}
		// Text, and the text form of every other type: TIME, ENUM, SET,
		// YEAR as text...
		s := string(v)
		return s, sqlcell.StringSize(s), nil
	case string:
		return cell, sqlcell.StringSize(v), nil
	}
	return nil, 0, fmt.Errorf("mysqlsource: unexpected %T value for a %s column", cell, typ)
}

// binaryTypes are the types whose values are bytes, not text: sent as
// base64. (The driver names a text column of a binary collation so.)
var binaryTypes = map[string]bool{"BINARY": true, "VARBINARY": true, "GEOMETRY": true, "BIT": true, "VECTOR": true}
