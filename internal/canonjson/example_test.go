package canonjson_test

import (
	"fmt"

	"github.com/askbi/askbi/internal/canonjson"
)

func ExampleCanonical() {
	out, err := canonjson.Canonical([]byte(`{ "limit": 1.0E1, "dashboard": "d\u0031", "tags": ["a"] }`))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))

	_, err = canonjson.Canonical([]byte(`{"a": 1, "\u0061": 2}`))
	fmt.Println(err)
	// Output:
	// {"dashboard":"d1","limit":10,"tags":["a"]}
	// canonjson.Canonical: invalid_argument: Invalid JSON at byte 9: duplicate member name.
}

func ExampleHash() {
	a, _ := canonjson.Hash([]byte(`{"b": 2, "a": 1}`))
	b, _ := canonjson.Hash([]byte(`{"a":1,"b":2.0}`))
	fmt.Println(a == b, a)
	// Output:
	// true 43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777
}
