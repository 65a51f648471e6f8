module nnc

go 1.19
