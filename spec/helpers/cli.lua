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

return H
