-- Helpers of the command-line specs: run shmemlab.cli.main in process and keep
-- what it writes.
local cli = require("shmemlab.cli")

local H = {}

-- a writable sink that keeps what is written
function H.sink()
  local s = { parts = {} }
  function s:write(...)
    for _, v in ipairs({ ... }) do self.parts[#self.parts + 1] = tostring(v) end
    return self
  end
  function s:text() return table.concat(self.parts) end
  return s
end

-- run main with argv; returns status, stdout text, stderr text
function H.run(argv)
  local out, err = H.sink(), H.sink()
  local status = cli.main(argv, out, err)
  return status, out:text(), err:text()
end

-- a fresh empty folder
function H.tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(require("lfs").mkdir(d))
  return d
end

-- the output of a shell command (stderr too) and its exit status line "exit=N"
function H.sh(cmd)
  local f = assert(io.popen(cmd .. " 2>&1; echo \"exit=$?\""))
  local out = f:read("a")
  f:close()
  return out
end

-- a new list: the items of a, then of b
function H.append(a, b)
  local t = {}
  for _, v in ipairs(a) do t[#t + 1] = v end
  for _, v in ipairs(b) do t[#t + 1] = v end
  return t
end

return H
