package main

import (
	"fmt"
	"strings"
	"time"

	pgquery "github.com/wasilibs/go-pgquery"
)

func try(name, s string) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Println(name, "PANIC", r)
		}
	}()
	t := time.Now()
	_, err := pgquery.Parse(s)
	fmt.Println(name, len(s), time.Since(t), err)
}

func main() {
	try("warm", "SELECT 1")
	try("plus5000", "SELECT 1"+strings.Repeat("+1", 5000))
	try("after1", "SELECT 1")
	try("after2", "SELECT 1 + 2")
	try("plus1000", "SELECT 1"+strings.Repeat("+1", 1000))
}
