package canonjson_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/internal/canonjson"
)

// MustCanonical returns Canonical(in) and fails tb on error.
func MustCanonical(tb testing.TB, in string) string {
	tb.Helper()
	out, err := canonjson.Canonical([]byte(in))
	if err != nil {
		tb.Fatalf("Canonical(%q): %v", in, err)
	}
	return string(out)
}

// MustHash returns Hash(in) and fails tb on error.
func MustHash(tb testing.TB, in string) string {
	tb.Helper()
	h, err := canonjson.Hash([]byte(in))
	if err != nil {
		tb.Fatalf("Hash(%q): %v", in, err)
	}
	return h
}

// TestRFC8785Examples runs the examples of RFC 8785 §3.2.2 and §3.2.3.
func TestRFC8785Examples(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "sample object §3.2.2",
			in: `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			name: "member order by UTF-16 code units §3.2.3",
			in: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			want: "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\"," +
				"\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{
			// U+1F600 is 0xD83D 0xDE00 in UTF-16, so it sorts before
			// U+FB33 and U+FFFF, unlike by code point or in UTF-8: the
			// reason JCS names UTF-16.
			name: "surrogate pair sorts below high BMP characters",
			in:   `{"\ufb33":1,"\ud83d\ude00":2,"\uffff":3}`,
			want: "{\"😀\":2,\"\ufb33\":1,\"\uffff\":3}",
		},
		{
			name: "nested objects sorted at every depth",
			in:   `{"b":{"d":1,"c":[{"f":1,"e":2}]},"a":null}`,
			want: `{"a":null,"b":{"c":[{"e":2,"f":1}],"d":1}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, MustCanonical(t, tt.in)); diff != "" {
				t.Errorf("Canonical mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNumbers runs the IEEE 754 table of RFC 8785 Appendix B, plus the
// boundaries of ECMAScript's Number::toString.
func TestNumbers(t *testing.T) {
	bits := []struct {
		hex, want string
	}{
		{"0000000000000000", "0"},
		{"8000000000000000", "0"}, // minus zero
		{"0000000000000001", "5e-324"},
		{"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"},
		{"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"44b52d02c7e14af5", "9.999999999999997e+22"},
		{"44b52d02c7e14af6", "1e+23"},
		{"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"},
		{"444b1ae4d6e2ef4f", "999999999999999900000"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"},
		{"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"},
		{"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"},
		{"43143ff3c1cb0959", "1424953923781206.2"},
	}
	for _, tt := range bits {
		t.Run(tt.hex, func(t *testing.T) {
			u, err := strconv.ParseUint(tt.hex, 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			in := strconv.FormatFloat(math.Float64frombits(u), 'e', -1, 64)
			if diff := cmp.Diff(tt.want, MustCanonical(t, in)); diff != "" {
				t.Errorf("Canonical(%s) mismatch (-want +got):\n%s", in, diff)
			}
		})
	}

	texts := []struct {
		in, want string
	}{
		{"-0", "0"},
		{"-0.0e7", "0"},
		{"0.0", "0"},
		{"1.0", "1"},
		{"100", "100"},
		{"1E2", "100"},
		{"1e20", "100000000000000000000"},
		{"1e21", "1e+21"},
		{"123456789012345678901", "123456789012345680000"},
		{"1e-6", "0.000001"},
		{"1e-7", "1e-7"},
		{"1.5e-7", "1.5e-7"},
		{"-1.25e+300", "-1.25e+300"},
		{"0.1", "0.1"},
		{"12.5", "12.5"},
		{"1e-400", "0"}, // underflows to zero, as in JSON.parse
		{"9007199254740993", "9007199254740992"},
	}
	for _, tt := range texts {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, MustCanonical(t, tt.in)); diff != "" {
				t.Errorf("Canonical(%s) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"mandatory escapes", `"\" \\ \b \f \n \r \t"`, `"\" \\ \b \f \n \r \t"`},
		{"other controls lower-case hex", `"\u0000\u0001\u001F\u000b"`, `"\u0000\u0001\u001f\u000b"`},
		{"solidus unescaped", `"\/a/b"`, `"/a/b"`},
		{"DEL and non-ASCII as is", `"\u007f\u00e9\u2028\u2029"`, "\"\x7fé\u2028\u2029\""},
		{"raw UTF-8 kept", `"grüße 😀"`, `"grüße 😀"`},
		{"surrogate pair decoded", `"\uD83D\uDE00"`, `"😀"`},
		{"escaped ASCII decoded", `"\u0041\u0062"`, `"Ab"`},
		{"empty", `""`, `""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, MustCanonical(t, tt.in)); diff != "" {
				t.Errorf("Canonical(%s) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestRejects(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name string
		in   string
		want askbi.Code
	}{
		{"duplicate key", `{"a":1,"a":1}`, askbi.InvalidArgument},
		{"duplicate key nested in object", `{"x":{"a":1,"b":2,"a":3}}`, askbi.InvalidArgument},
		{"duplicate key nested in array", `[1,[{"k":true,"k":false}]]`, askbi.InvalidArgument},
		{"duplicate key by escape", `{"a":1,"\u0061":2}`, askbi.InvalidArgument},
		{"duplicate key by solidus escape", `{"/":1,"\/":2}`, askbi.InvalidArgument},
		{"duplicate key by surrogate escape", `{"😀":1,"\ud83d\ude00":2}`, askbi.InvalidArgument},
		{"invalid UTF-8 in string", "\"a\xffb\"", askbi.InvalidArgument},
		{"invalid UTF-8 in key", "{\"\xc3\":1}", askbi.InvalidArgument},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", askbi.InvalidArgument},
		{"lone high surrogate", `"\ud800"`, askbi.InvalidArgument},
		{"lone low surrogate", `"\udc00"`, askbi.InvalidArgument},
		{"high surrogate then ASCII escape", `"\ud800\u0041"`, askbi.InvalidArgument},
		{"high surrogate then text", `"\ud800x"`, askbi.InvalidArgument},
		{"two high surrogates", `"\ud800\ud800"`, askbi.InvalidArgument},
		{"number too large", `1e400`, askbi.InvalidArgument},
		{"number too small", `[-1.8e308]`, askbi.InvalidArgument},
		{"trailing value", `{} {}`, askbi.InvalidArgument},
		{"trailing number", `1 2`, askbi.InvalidArgument},
		{"trailing garbage", `nullx`, askbi.InvalidArgument},
		{"trailing comma in array", `[1,]`, askbi.InvalidArgument},
		{"trailing comma in object", `{"a":1,}`, askbi.InvalidArgument},
		{"empty", ``, askbi.InvalidArgument},
		{"only whitespace", " \n", askbi.InvalidArgument},
		{"byte order mark", "\ufeff{}", askbi.InvalidArgument},
		{"leading zero", `01`, askbi.InvalidArgument},
		{"bare fraction point", `1.`, askbi.InvalidArgument},
		{"leading point", `.5`, askbi.InvalidArgument},
		{"plus sign", `+1`, askbi.InvalidArgument},
		{"lone minus", `-`, askbi.InvalidArgument},
		{"empty exponent", `1e+`, askbi.InvalidArgument},
		{"NaN", `NaN`, askbi.InvalidArgument},
		{"Infinity", `[Infinity]`, askbi.InvalidArgument},
		{"unquoted key", `{a:1}`, askbi.InvalidArgument},
		{"single quotes", `'a'`, askbi.InvalidArgument},
		{"raw control in string", "\"a\tb\"", askbi.InvalidArgument},
		{"unknown escape", `"\x41"`, askbi.InvalidArgument},
		{"short unicode escape", `"\u12"`, askbi.InvalidArgument},
		{"unterminated string", `"abc`, askbi.InvalidArgument},
		{"unterminated object", `{"a":1`, askbi.InvalidArgument},
		{"missing colon", `{"a" 1}`, askbi.InvalidArgument},
		{"truncated literal", `tru`, askbi.InvalidArgument},
		{"too deep", deep(canonjson.MaxDepth + 1), askbi.TooLarge},
		{"too deep in object", strings.Repeat(`{"a":`, canonjson.MaxDepth+1) + "1" + strings.Repeat("}", canonjson.MaxDepth+1), askbi.TooLarge},
		{"too large", `"` + strings.Repeat("a", canonjson.MaxSize-1) + `"`, askbi.TooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := canonjson.Canonical([]byte(tt.in))
			if got := askbi.ErrorCode(err); got != tt.want {
				t.Fatalf("Canonical = %q, %v; want code %s", out, err, tt.want)
			}
			if _, err := canonjson.Hash([]byte(tt.in)); askbi.ErrorCode(err) != tt.want {
				t.Errorf("Hash error = %v, want code %s", err, tt.want)
			}
			if msg := askbi.ErrorMessage(err); len(tt.in) > 2 && strings.Contains(msg, tt.in) {
				t.Errorf("message %q repeats the input", msg)
			}
		})
	}
}

func TestLimitsAccepted(t *testing.T) {
	tests := []struct {
		name, in string
	}{
		{"MaxDepth", strings.Repeat("[", canonjson.MaxDepth) + strings.Repeat("]", canonjson.MaxDepth)},
		{"MaxSize", `"` + strings.Repeat("a", canonjson.MaxSize-2) + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.in, MustCanonical(t, tt.in)); diff != "" {
				t.Errorf("Canonical mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHash(t *testing.T) {
	sum := sha256.Sum256([]byte(`{"a":[1,"x"],"b":1}`))
	if diff := cmp.Diff(hex.EncodeToString(sum[:]), MustHash(t, `{"b": 1, "a": [1.0, "x"]}`)); diff != "" {
		t.Errorf("Hash mismatch (-want +got):\n%s", diff)
	}
}

func TestHashEqualForEqualValues(t *testing.T) {
	base := `{"dashboard":"d1","filters":{"country":"DE","from":"2026-01-01"},"limit":10,"tags":["a","b"],"x":null}`
	tests := []struct {
		name, in string
	}{
		{"whitespace", " {\n\t\"dashboard\" : \"d1\" ,\"filters\":{ \"country\":\"DE\", \"from\":\"2026-01-01\"},\r\n\"limit\":10,\"tags\":[ \"a\" , \"b\" ],\"x\":null } "},
		{"member order", `{"x":null,"tags":["a","b"],"limit":10,"filters":{"from":"2026-01-01","country":"DE"},"dashboard":"d1"}`},
		{"number forms", `{"dashboard":"d1","filters":{"country":"DE","from":"2026-01-01"},"limit":1.0e1,"tags":["a","b"],"x":null}`},
		{"string escapes", `{"dashboard":"\u0064\u0031","filters":{"country":"D\u0045","from":"2026\u002d01-01"},"limit":10,"tags":["a","b"],"x":null}`},
	}
	want := MustHash(t, base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MustHash(t, tt.in); got != want {
				t.Errorf("Hash(%s) = %s, want %s (the hash of %s)", tt.in, got, want, base)
			}
		})
	}
	if a, b := MustHash(t, `"2026\/01"`), MustHash(t, `"2026/01"`); a != b {
		t.Errorf("escaped solidus hashes differently: %s != %s", a, b)
	}
}

func TestHashDiffersForChangedValues(t *testing.T) {
	base := `{"dashboard":"d1","filters":{"country":"DE"},"limit":10,"on":true,"tags":["a","b"],"x":null}`
	variants := []struct {
		name, in string
	}{
		{"string value", `{"dashboard":"d2","filters":{"country":"DE"},"limit":10,"on":true,"tags":["a","b"],"x":null}`},
		{"nested value", `{"dashboard":"d1","filters":{"country":"FR"},"limit":10,"on":true,"tags":["a","b"],"x":null}`},
		{"number", `{"dashboard":"d1","filters":{"country":"DE"},"limit":11,"on":true,"tags":["a","b"],"x":null}`},
		{"number type", `{"dashboard":"d1","filters":{"country":"DE"},"limit":"10","on":true,"tags":["a","b"],"x":null}`},
		{"bool", `{"dashboard":"d1","filters":{"country":"DE"},"limit":10,"on":false,"tags":["a","b"],"x":null}`},
		{"array order", `{"dashboard":"d1","filters":{"country":"DE"},"limit":10,"on":true,"tags":["b","a"],"x":null}`},
		{"array element", `{"dashboard":"d1","filters":{"country":"DE"},"limit":10,"on":true,"tags":["a"],"x":null}`},
		{"null to empty", `{"dashboard":"d1","filters":{"country":"DE"},"limit":10,"on":true,"tags":["a","b"],"x":""}`},
		{"member removed", `{"dashboard":"d1","filters":{"country":"DE"},"limit":10,"on":true,"tags":["a","b"]}`},
		{"member name", `{"dashboard":"d1","filters":{"Country":"DE"},"limit":10,"on":true,"tags":["a","b"],"x":null}`},
		{"whitespace inside string", `{"dashboard":"d1 ","filters":{"country":"DE"},"limit":10,"on":true,"tags":["a","b"],"x":null}`},
	}
	want := MustHash(t, base)
	for _, tt := range variants {
		t.Run(tt.name, func(t *testing.T) {
			if got := MustHash(t, tt.in); got == want {
				t.Errorf("Hash(%s) equals Hash(%s)", tt.in, base)
			}
		})
	}
}

// FuzzCanonical checks that the canonical form is idempotent, valid JSON,
// and decodes to the same value as its input.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"b":[1,2.5,-0,1e21,1e-7],"a":{"c":"\u20ac\n","d":null}}`,
		`[true,false,null,"\ud83d\ude00",""]`,
		`{"\u0061":1,"a ":2}`,
		`123456789.123456789`,
		`"\u0000\u001f\/"`,
		`{"x":[[[{}]]]}`,
		`{"a":1,"a":2}`,
		`1e400`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := canonjson.Canonical(in)
		if err != nil {
			return
		}
		again, err := canonjson.Canonical(c)
		if err != nil {
			t.Fatalf("Canonical(%q) = %q, which does not canonicalize: %v", in, c, err)
		}
		if diff := cmp.Diff(string(c), string(again)); diff != "" {
			t.Fatalf("Canonical is not idempotent for %q (-once +twice):\n%s", in, diff)
		}
		if !json.Valid(c) {
			t.Fatalf("Canonical(%q) = %q, not valid JSON", in, c)
		}
		var want, got any
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("Canonical accepted %q, which encoding/json rejects: %v", in, err)
		}
		if err := json.Unmarshal(c, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Canonical(%q) = %q decodes differently (-input +canonical):\n%s", in, c, diff)
		}
	})
}
