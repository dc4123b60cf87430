-- The end-to-end test of `nika lsp` with Neovim's built-in LSP client
-- (cmd/nika/lsp_nvim_test.go runs it: nvim --headless --clean -u NONE -c 'luafile …').
-- It opens a broken workflow with `nika lsp` attached, waits for the diagnostics, asks for
-- a hover and a completion, fixes one finding through the buffer (Neovim sends an
-- incremental didChange), waits for the new diagnostics, stops the client and writes what
-- it received as JSON. Works with vim.lsp.start (Neovim 0.8 and later) and with
-- vim.lsp.start_client + buf_attach_client (Debian 12's 0.7).
local bin = os.getenv("NIKA_LSP_BIN")
local file = os.getenv("NIKA_LSP_FILE")
local out = os.getenv("NIKA_LSP_OUT")

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local function fail(msg)
  write(out .. ".err", msg)
  vim.cmd("cquit 1")
end

vim.cmd("edit " .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
local uri = vim.uri_from_bufnr(buf)
local received = {}
local exit_code = vim.NIL

local config = {
  name = "nika",
  cmd = { bin, "lsp" },
  root_dir = vim.fn.fnamemodify(file, ":p:h"),
  handlers = {
    ["textDocument/publishDiagnostics"] = function(err, result, ctx, cfg)
      if result and result.uri == uri then
        table.insert(received, result)
      end
      return vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, cfg)
    end,
  },
  on_exit = function(code)
    exit_code = code
  end,
}
local id
if vim.lsp.start then
  id = vim.lsp.start(config)
else
  id = vim.lsp.start_client(config)
  vim.lsp.buf_attach_client(buf, id)
end
if not id then
  fail("the client did not start")
end

if not vim.wait(30000, function() return #received > 0 end, 10) then
  fail("no diagnostics after opening the file")
end
local first = received[#received]

-- A hover and a completion on the `tool: nika:fetc` line, through the client.
local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
local tool_line, tool_col
for i, l in ipairs(lines) do
  local s = l:find("nika:fetc", 1, true)
  if s then
    tool_line, tool_col = i - 1, s - 1
    break
  end
end
local function request(method, params)
  local res = vim.lsp.buf_request_sync(buf, method, params, 10000)
  return res and res[id] and res[id].result or vim.NIL
end
local at = { textDocument = { uri = uri }, position = { line = tool_line, character = tool_col + 3 } }
local hover = request("textDocument/hover", at)
local completion = request("textDocument/completion",
  { textDocument = { uri = uri }, position = { line = tool_line, character = tool_col + 8 } })

-- Fix `modle` (the first finding) in the buffer.
for i, l in ipairs(lines) do
  local s = l:find("modle", 1, true)
  if s then
    vim.api.nvim_buf_set_text(buf, i - 1, s - 1, i - 1, s - 1 + 5, { "model" })
    break
  end
end
local n = #received
if not vim.wait(30000, function()
  return #received > n and received[#received].version ~= first.version
end, 10) then
  fail("no diagnostics after the change")
end
local second = received[#received]
local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"

vim.lsp.stop_client(id)
if not vim.wait(30000, function() return exit_code ~= vim.NIL end, 10) then
  fail("the server did not exit after shutdown")
end

write(out, vim.fn.json_encode({
  first = first,
  second = second,
  text = text,
  hover = hover,
  completion = completion,
  exit_code = exit_code,
}))
vim.cmd("qall!")
