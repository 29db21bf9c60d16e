package mysqlsource_test

import (
	"fmt"

	"github.com/askbi/askbi/dataexec/mysqlsource"
)

// The statements that make an account able to read database warehouse
// and nothing else; run them as an administrator of the server.
func ExampleSQLForReadOnlyUser() {
	for _, q := range mysqlsource.SQLForReadOnlyUser("askbi_reader", "%", "s3cret", "warehouse") {
		fmt.Println(q)
	}
	// Output:
	// SET SESSION sql_mode = REPLACE(@@SESSION.sql_mode, 'NO_BACKSLASH_ESCAPES', '')
	// CREATE USER IF NOT EXISTS 'askbi_reader'@'%' IDENTIFIED BY 's3cret'
	// ALTER USER 'askbi_reader'@'%' IDENTIFIED BY 's3cret'
	// REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'askbi_reader'@'%'
	// GRANT SELECT ON `warehouse`.* TO 'askbi_reader'@'%'
}
