package pgsource_test

import (
	"fmt"
	"strings"

	"github.com/askbi/askbi/dataexec/pgsource"
)

// The statements that make a login able to read schema public and nothing
// else; run them as a superuser of the warehouse database.
func ExampleSQLForReadOnlyRole() {
	for _, q := range pgsource.SQLForReadOnlyRole("askbi_reader", "s3cret", "public") {
		first, _, _ := strings.Cut(q, "\n")
		fmt.Println(first)
	}
	// Output:
	// DO $askbi$
	// ALTER ROLE "askbi_reader" WITH LOGIN PASSWORD 's3cret' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
	// ALTER ROLE "askbi_reader" SET default_transaction_read_only = on
	// ALTER ROLE "askbi_reader" SET statement_timeout = '30s'
	// ALTER ROLE "askbi_reader" SET idle_in_transaction_session_timeout = '60s'
	// GRANT USAGE ON SCHEMA "public" TO "askbi_reader"
	// GRANT SELECT ON ALL TABLES IN SCHEMA "public" TO "askbi_reader"
	// ALTER DEFAULT PRIVILEGES IN SCHEMA "public" GRANT SELECT ON TABLES TO "askbi_reader"
	// DO $askbi$
}
