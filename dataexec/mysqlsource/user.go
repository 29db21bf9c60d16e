package mysqlsource

import "strings"

// SQLForReadOnlyUser returns the statements that create (or update) the
// account user@host as a login that can only read the tables and views of
// database, now and later, for the Source to connect as. Run them in
// order as an administrator (root, or a user with CREATE USER and the
// grant option on database). They can be run again: an existing account
// gets the password anew and loses every other privilege.
//
// The account gets SELECT on database and nothing else: no FILE (so
// LOAD_FILE reads nothing and INTO OUTFILE writes nothing), no PROCESS,
// no EXECUTE (stored functions and procedures), no other database. The
// built-in functions that need no privilege (SLEEP, GET_LOCK, BENCHMARK)
// stay callable: the Source's guard refuses them.
//
// host is the account's host part: "%" for any, "localhost" for the
// socket. The statements hold the password, so do not log them. The first
// statement makes backslashes escapes in the administrator's session, as
// the quoting here assumes, whatever its sql_mode.
func SQLForReadOnlyUser(user, host, password, database string) []string {
	account := quote(user) + "@" + quote(host)
	return []string{
		"SET SESSION sql_mode = REPLACE(@@SESSION.sql_mode, 'NO_BACKSLASH_ESCAPES', '')",
		"CREATE USER IF NOT EXISTS " + account + " IDENTIFIED BY " + quote(password),
		"ALTER USER " + account + " IDENTIFIED BY " + quote(password),
		"REVOKE ALL PRIVILEGES, GRANT OPTION FROM " + account,
		"GRANT SELECT ON " + quoteName(database) + ".* TO " + account,
	}
}

// quote is s as a string literal, with backslashes as escapes.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

// quoteName is s as a quoted name.
func quoteName(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
