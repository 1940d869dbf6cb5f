// Parameterized shift register with parallel load, serial input and enable.
module shift_reg #(
    parameter int WIDTH = 8
) (
    input  logic             clk,
    input  logic             rst,     // synchronous, active high
    input  logic             load,
    input  logic             en,
    input  logic             dir,     // 0 = shift left, 1 = shift right
    input  logic             sin,
    input  logic [WIDTH-1:0] din,
    output logic [WIDTH-1:0] q,
    output logic             sout
);
  always_ff @(posedge clk) begin
    if (rst) q <= '0;
    else if (load) q <= din;
    else if (en) begin
      if (dir) q <= {sin, q[WIDTH-1:1]};
      else q <= {q[WIDTH-2:0], sin};
    end
  end

  assign sout = dir ? q[0] : q[WIDTH-1];
endmodule
