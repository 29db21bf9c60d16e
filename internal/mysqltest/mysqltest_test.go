package mysqltest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

func TestMain(m *testing.M) { Main(m) }

func TestMustDatabase(t *testing.T) {
	a, b := MustDB(t), MustDB(t)
	if _, err := a.Exec(`CREATE TABLE only_in_a (x int)`); err != nil {
		t.Fatal(err)
	}
	var names [2]string
	var tables [2]int
	for i, db := range []*sqlx.DB{a, b} {
		if err := db.Get(&names[i], `SELECT DATABASE()`); err != nil {
			t.Fatal(err)
		}
		if err := db.Get(&tables[i], `SELECT count(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'only_in_a'`); err != nil {
			t.Fatal(err)
		}
	}
	if names[0] == names[1] || tables != [2]int{1, 0} {
		t.Errorf("databases %v with the table %v times: want two databases, the table in the first only", names, tables)
	}
	t.Logf("server: %s", Version(t))
}

// TestMustDatabaseDropped: the database is gone after its test, even with
// a session still in a transaction on it.
func TestMustDatabaseDropped(t *testing.T) {
	s := mustServer(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		var held *sqlx.Conn
		t.Cleanup(func() {
			if held != nil {
				held.Close()
			}
		})
		db := MustDB(t)
		if err := db.Get(&name, `SELECT DATABASE()`); err != nil {
			t.Fatal(err)
		}
		var err error
		if held, err = db.Connx(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := held.ExecContext(t.Context(), `CREATE TABLE x (a int)`); err != nil {
			t.Fatal(err)
		}
		if _, err := held.ExecContext(t.Context(), `START TRANSACTION`); err != nil {
			t.Fatal(err)
		}
		if _, err := held.ExecContext(t.Context(), `SELECT * FROM x`); err != nil {
			t.Fatal(err)
		}
	})
	var n int
	if err := s.admin.Get(&n, `SELECT count(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?`, name); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s still exists after its test", name)
	}
}

func TestVerdict(t *testing.T) {
	notInstalled := fmt.Errorf("mysqltest: %w: no mariadbd", ErrNotInstalled)
	tests := []struct {
		name     string
		err      error
		required bool
		skip     bool
		msg      string
	}{
		{"not installed", notInstalled, false, true, "SKIPPING: MariaDB not installed; install mariadb-server or set ASKBI_TEST_MYSQL_DSN (mysqltest: MariaDB is not installed: no mariadbd)"},
		{"not installed but required", notInstalled, true, false, "mysqltest: ASKBI_REQUIRE_MARIADB=1 but mysqltest: MariaDB is not installed: no mariadbd"},
		{"broken", errors.New("install: out of disk"), false, false, "mysqltest: install: out of disk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			skip, msg := verdict(tc.err, tc.required)
			if skip != tc.skip || msg != tc.msg {
				t.Errorf("verdict = %v, %q; want %v, %q", skip, msg, tc.skip, tc.msg)
			}
		})
	}
}

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mk := func(name, pid string, mtime time.Time) {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if pid != "" {
			if err := os.WriteFile(filepath.Join(dir, name, "mysqld.pid"), []byte(pid+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(filepath.Join(dir, name), mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	mk(tmpPrefix+"running", fmt.Sprint(os.Getpid()), old) // a live process
	mk(tmpPrefix+"dead", "2147483646", old)               // no such process
	mk(tmpPrefix+"no-pid", "", old)
	mk(tmpPrefix+"new", "", time.Now()) // may still be installing
	mk("other", "", old)
	removeStale(dir, time.Minute)
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := fmt.Sprint([]string{"askbi-mysqltest-new", "askbi-mysqltest-running", "other"})
	if fmt.Sprint(left) != want {
		t.Errorf("left %v, want %s", left, want)
	}
}
