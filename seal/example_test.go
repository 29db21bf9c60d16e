package seal_test

import (
	"fmt"

	"github.com/askbi/askbi/seal"
)

func Example() {
	keys, err := seal.NewStaticKeyring("2026-12", map[string][]byte{"2026-12": seal.GenerateKey()})
	if err != nil {
		panic(err)
	}
	// Bind the value to where it is stored, so a copy elsewhere fails.
	ad := seal.Context("askbi.example.v1", "acme", "conn_1")
	box, err := seal.Seal(keys, []byte("s3cret"), ad)
	if err != nil {
		panic(err)
	}
	plain, err := seal.Open(keys, box, ad)
	fmt.Println(box.KeyID, string(plain), err)
	_, err = seal.Open(keys, box, seal.Context("askbi.example.v1", "acme", "conn_2"))
	fmt.Println("elsewhere:", err != nil)
	// Output:
	// 2026-12 s3cret <nil>
	// elsewhere: true
}
