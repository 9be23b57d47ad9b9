// Command sqlitecount prints the number of rows of a table in a SQLite
// database (used by the CI script, which cannot count on a sqlite3 binary).
//
//	go run ./internal/tools/sqlitecount DB TABLE
package main

import (
	"database/sql"
	"fmt"
	"os"
	"strings"

	_ "modernc.org/sqlite"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sqlitecount DB TABLE")
		os.Exit(2)
	}
	db, err := sql.Open("sqlite", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer db.Close()
	var n int64
	q := `SELECT count(*) FROM "` + strings.ReplaceAll(os.Args[2], `"`, `""`) + `"`
	if err := db.QueryRow(q).Scan(&n); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(n)
}
