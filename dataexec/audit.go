package dataexec

// Audit actions the Executor records (access.AuditEntry.Action). Other
// packages name their own, such as mcpserver's "mcp.tool_call".
const (
	ActionDatasetSave     = "dataset.save"
	ActionChartPreview    = "chart.preview"
	ActionChartUpdate     = "chart.update"
	ActionChartPlace      = "chart.place"
	ActionDashboardDelete = "dashboard.delete"
)
