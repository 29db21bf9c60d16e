package pgsource

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/askbi/askbi/internal/sqlcell"
)

// normalize turns a value scanned from lib/pq into a JSON-friendly cell
// (see dataexec.Table) and estimates its size as JSON. typ is the column's
// type name as lib/pq reports it ("NUMERIC", "JSONB", ...; "" when lib/pq
// does not know the type).
//
// A value that stays as it is returns cell, the interface it came in, so
// that it is not boxed again.
func normalize(cell any, typ string) (any, int64, error) {
	switch v := cell.(type) {
	case nil:
		return nil, 4, nil
	case bool:
		if v {
			return cell, 4, nil
		}
		return cell, 5, nil
	case int64:
		var buf [20]byte
		return cell, int64(len(strconv.AppendInt(buf[:0], v, 10))), nil
	case float64:
		// NaN and ±Inf stay float64: JSON has no form for them, and the
		// chart layer rejects them with a message.
		var buf [32]byte
		return cell, int64(len(strconv.AppendFloat(buf[:0], v, 'g', -1, 64))), nil
	case time.Time:
		switch typ {
		case "TIME":
			return v.Format("15:04:05.999999"), 17, nil
		case "TIMETZ":
			return v.Format("15:04:05.999999Z07:00"), 23, nil
		}
		return cell, 37, nil // quoted RFC 3339 with nanoseconds and offset
	case []byte:
		switch typ {
		case "NUMERIC":
			s := string(v)
			switch s {
			case "NaN":
				return math.NaN(), 3, nil
			case "Infinity":
				return math.Inf(1), 8, nil
			case "-Infinity":
				return math.Inf(-1), 9, nil
			}
			return json.Number(s), int64(len(s)), nil
		case "JSON", "JSONB":
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.UseNumber()
			var x any
			if err := dec.Decode(&x); err != nil {
				return nil, 0, fmt.Errorf("pgsource: decode %s cell: %w", typ, err)
			}
			return x, int64(len(v)), nil
		case "BYTEA":
			s := base64.StdEncoding.EncodeToString(v)
			return s, int64(len(s)) + 2, nil
		}
		// Text, and the text form of every other type: uuid, interval,
		// arrays, enums, ranges...
		s := string(v)
		return s, sqlcell.StringSize(s), nil
	case string:
		return cell, sqlcell.StringSize(v), nil
	}
	return nil, 0, fmt.Errorf("pgsource: unexpected %T value for a %s column", cell, typ)
}
