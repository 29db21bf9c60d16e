package dataexec

import (
	"github.com/askbi/askbi/workspace"
)

var (
	_ workspace.Catalog       = (*workspace.MemoryCatalog)(nil)
	_ workspace.CatalogWriter = (*workspace.MemoryCatalog)(nil)
)
