// 4-bit combinational ALU: one case statement, a zero flag and a carry.
module alu4 (
    input  logic [3:0] a,
    input  logic [3:0] b,
    input  logic [1:0] op,
    output logic [3:0] y,
    output logic       carry,
    output logic       zero
);
  logic [4:0] sum;
  assign sum = {1'b0, a} + {1'b0, b};

  always_comb begin
    carry = 1'b0;
    case (op)
      2'b00: begin
        y = sum[3:0];
        carry = sum[4];
      end
      2'b01: y = a - b;
      2'b10: y = a & b;
      default: y = a ^ b;
    endcase
  end

  assign zero = (y == 4'd0) && (op != 2'b11);
endmodule
