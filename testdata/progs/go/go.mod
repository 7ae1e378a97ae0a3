module lockstep-testdata/go

go 1.22
